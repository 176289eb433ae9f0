#!/usr/bin/env bash
# push.sh REGISTRY builds the fleet's images, pushes them to a registry you
# name and pins them, by digest, in kustomization.yaml's images: block
# (make k8s-push REGISTRY=registry.example.com/team):
#
#   1. deploy/build-images.sh worker zookeeper  (what make images builds)
#   2. docker tag + docker push  REGISTRY/snowflaked:<version>
#                                REGISTRY/zookeeper:3.8
#   3. reads back the digests the registry gave them (docker inspect
#      RepoDigests) and writes, for each, in kustomization.yaml:
#        - name: snowfleet/snowflaked            (the name the manifests use)
#          newName: REGISTRY/snowflaked
#          digest: sha256:<64 hex>
#
# Then kubectl apply -k deploy/k8s runs exactly the images you pushed; commit
# the changed kustomization.yaml (in your fork or your own overlay).
#
# REGISTRY is a registry host with an optional path (registry.example.com/team,
# localhost:5000, ghcr.io/you): a name without a host would resolve to Docker
# Hub, and is refused. Log in first (docker login).
#
# Env:
#   ZK_IMAGE_REF  use this ZooKeeper image instead of building and pushing
#                 ours: fully qualified and pinned, e.g. the official one,
#                 docker.io/library/zookeeper:3.8@sha256:<digest of 3.8 you checked>
#   VERSION       the worker image's tag (default: git describe --always --dirty)
#   KUSTOMIZATION the file to write (default: kustomization.yaml beside this
#                 script; point it at your overlay's)
#   SKIP_BUILD=1  push what is already built (the images make images made)
#
# push.sh set-images FILE NAME=REF... only writes the images: block of FILE,
# each NAME pinned to REF (HOST[/PATH]/REPO[:TAG]@sha256:<64 hex>): what
# step 3 does, and what make k8s runs on a copy (TestPushScript).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

die() { echo "push.sh: $*" >&2; exit 1; }

# The names the manifests use for each image; the images: entries match them.
WORKER_NAME=snowfleet/snowflaked
ZK_NAME=zookeeper

# qualified REF: the first component of the name is a registry host (has a
# dot or a port, or is localhost), as Docker reads a reference.
qualified() {
	local host=${1%%/*}
	[[ $1 == */* ]] && [[ $host == *.* || $host == *:* || $host == localhost ]]
}

# pinned REF: ends in @sha256:<64 lowercase hex>.
pinned() { [[ $1 =~ @sha256:[0-9a-f]{64}$ ]]; }

check_ref() { # what ref
	qualified "$2" || die "$1: $2 is not fully qualified (no registry host: it would resolve to Docker Hub)"
	pinned "$2" || die "$1: $2 is not pinned by digest (@sha256:<64 hex>)"
}

# set_images FILE NAME=REF...: replaces FILE's top-level images: block (or
# appends one) with an entry per NAME: newName (REF without tag and digest)
# and digest. Other lines of FILE are kept as they are.
set_images() {
	local file=$1 pair name ref repo digest block tmp
	shift
	[[ -f $file ]] || die "$file: no such file"
	(($#)) || die "set-images: no NAME=REF given"
	block="images:"
	for pair in "$@"; do
		name=${pair%%=*}
		ref=${pair#*=}
		[[ $pair == *=* && -n $name ]] || die "set-images: $pair is not NAME=REF"
		check_ref "$name" "$ref"
		digest=${ref##*@}
		repo=${ref%@*}
		# Drop a tag (a colon after the last slash), keep a registry port.
		if [[ ${repo##*/} == *:* ]]; then repo=${repo%:*}; fi
		block+=$'\n'"  - name: $name"$'\n'"    newName: $repo"$'\n'"    digest: $digest"
	done
	tmp=$(mktemp "$file.XXXXXX")
	# Everything but the old block (from "images:" at column 0 to the next
	# line that is neither indented nor a list item), then the new block
	# where the old one was, or at the end.
	BLOCK=$block awk '
		/^images:/ { print ENVIRON["BLOCK"]; done = 1; skip = 1; next }
		skip && /^([ \t-]|$)/ { next }
		{ skip = 0; print }
		END { if (!done) print ENVIRON["BLOCK"] }
	' "$file" >"$tmp"
	mv "$tmp" "$file"
	echo "push.sh: wrote the images: of $file"
}

# digest_of IMAGE: the REPO@sha256:... the registry gave IMAGE's repository
# when it was pushed (docker inspect lists one per repository pushed to).
digest_of() {
	local image=$1 repo d
	repo=${image%:*}
	while read -r d; do
		if [[ ${d%@*} == "$repo" ]]; then
			echo "$d"
			return
		fi
	done < <(docker inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$image")
	die "$image: no digest from $repo after the push (docker inspect RepoDigests)"
}

push() { # local remote
	echo "push.sh: docker push $2" >&2
	docker tag "$1" "$2"
	docker push "$2" >&2
	digest_of "$2"
}

main() {
	if [[ ${1:-} == set-images ]]; then
		shift
		set_images "$@"
		return
	fi
	(($# == 1)) || die "usage: push.sh REGISTRY (e.g. registry.example.com/team), or push.sh set-images FILE NAME=REF..."
	local registry=${1%/} version worker_ref zk_ref what=(worker)
	if [[ $registry == *@* || ( $registry == */* && ${registry#*/} == *:* ) ]]; then
		die "REGISTRY $registry: want a registry host and a path, no tag or digest"
	fi
	qualified "$registry/x" || die "REGISTRY $registry has no registry host (registry.example.com/team, localhost:5000): images would go to Docker Hub"
	if [[ -n ${ZK_IMAGE_REF:-} ]]; then
		check_ref "ZK_IMAGE_REF" "$ZK_IMAGE_REF"
	else
		what+=(zookeeper)
	fi
	command -v docker >/dev/null || die "docker is not installed"
	if [[ ${SKIP_BUILD:-} != 1 ]]; then
		"$root/deploy/build-images.sh" "${what[@]}"
	fi
	# shellcheck source=deploy/lib.sh
	source "$root/deploy/lib.sh"
	version=${VERSION:-$(git -C "$root" describe --always --dirty 2>/dev/null || echo dev)}
	worker_ref=$(push "$WORKER_IMAGE" "$registry/snowflaked:$version")
	if [[ -n ${ZK_IMAGE_REF:-} ]]; then
		zk_ref=$ZK_IMAGE_REF
	else
		zk_ref=$(push "$ZK_IMAGE" "$registry/zookeeper:${ZK_IMAGE##*:}")
	fi
	set_images "${KUSTOMIZATION:-$here/kustomization.yaml}" "$WORKER_NAME=$worker_ref" "$ZK_NAME=$zk_ref"
	echo "push.sh: pinned $worker_ref and $zk_ref; now: kubectl apply -k $(dirname "${KUSTOMIZATION:-$here/kustomization.yaml}")"
}

main "$@"
