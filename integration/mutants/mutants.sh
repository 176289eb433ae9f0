#!/usr/bin/env bash
# mutants.sh: the mutation proof's deliberately broken workers, one patch
# each (integration/mutants/<name>.patch, integration/README.md#mutation-proof).
# The production source holds no mutant; a mutant exists only in a scratch
# copy of the tree with its patch applied.
#
# Usage: integration/mutants/mutants.sh names        the mutants, one a line
#        integration/mutants/mutants.sh check        every patch applies to the
#                                                    working tree (git apply --check;
#                                                    make lint)
#        integration/mutants/mutants.sh tree NAME DIR  the working tree (tracked and
#                                                    untracked files, not ignored ones)
#                                                    copied into DIR, NAME's patch applied
#        integration/mutants/mutants.sh vet [NAME...]  each patched copy passes go vet
#                                                    with -tags chaos (the image's build)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

die() { echo "mutants.sh: $*" >&2; exit 1; }

names() {
	local p
	for p in "$here"/*.patch; do basename "$p" .patch; done
}

patch_of() {
	local p="$here/$1.patch"
	[[ -f $p ]] || die "no mutant $1 (want one of: $(names | tr '\n' ' '))"
	echo "$p"
}

check() {
	local n bad=0
	for n in $(names); do
		if ! git -C "$root" apply --check "$(patch_of "$n")"; then
			echo "mutants.sh: integration/mutants/$n.patch no longer applies: update it to the code it breaks" >&2
			bad=1
		fi
	done
	return $bad
}

# tree copies the working tree, as go build would see it, into dir and
# applies the patch there (outside any repository: git apply patches files).
tree() { # name dir
	local p
	p=$(patch_of "$1")
	mkdir -p "$2"
	(cd "$root" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$2" -xf -
	(cd "$2" && git apply "$p") || die "$1.patch does not apply"
}

vet() {
	local n dir
	(($#)) || set -- $(names)
	for n in "$@"; do
		dir=$(mktemp -d)
		tree "$n" "$dir"
		echo "$n: go vet -tags chaos ./... on the patched copy"
		(cd "$dir" && go vet -tags chaos ./...) || { rm -rf "$dir"; die "$n: the patched tree does not vet"; }
		rm -rf "$dir"
	done
}

case ${1:-} in
names) names ;;
check) check ;;
tree) (($# == 3)) || die "usage: tree NAME DIR"; tree "$2" "$3" ;;
vet) shift; vet "$@" ;;
*) die "usage: mutants.sh names | check | tree NAME DIR | vet [NAME...]" ;;
esac
