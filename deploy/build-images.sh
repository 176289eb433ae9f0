#!/usr/bin/env bash
# build-images.sh builds the fleet's images without any registry:
#   snowfleet/snowflaked:latest  static snowflaked + snowflakectl, FROM scratch
#   snowfleet/snowflaked:chaos   the same built with -tags chaos (movable clock),
#                                plus /idlease-example (the embedded lease's
#                                example, the chaos suite's embedded container)
#   snowfleet/snowflaked:mutant-<name>  the chaos build of a scratch copy of
#                                the tree with integration/mutants/<name>.patch
#                                applied: a worker broken on purpose (make
#                                integration-mutants; built only when asked)
#   snowfleet/zookeeper:3.8      Debian's ZooKeeper 3.8 on a debootstrapped base
#   snowfleet/prometheus:latest  Debian's Prometheus on the same base, with rules
# The ZooKeeper base (debootstrap, about a minute) is made once: skipped while
# the base image exists, re-imported from the cached rootfs tarball otherwise.
#
# Usage: deploy/build-images.sh [worker] [chaos] [mutant | mutant-<name>] [zookeeper] [prometheus]
#        (default: all but the mutants; mutant: every one)
#        deploy/build-images.sh clean   (remove them, the base and the cache)
# Env: ZK_IMAGE (an image you already have, e.g. zookeeper:3.8, is left alone;
#      likewise PROMETHEUS_IMAGE, e.g. prom/prometheus),
#      SNOWFLEET_CACHE, DEBIAN_MIRROR, DEBIAN_SUITE, DEBIAN_KEYRING (default
#      Debian's archive keyring; debootstrap checks every signature with it,
#      and the build refuses to run without it), BASE_MAX_AGE_DAYS (7: an
#      older base is rebuilt, for the archive's security updates),
#      REBUILD_BASE=1 (rebuild it now).
set -euo pipefail
# shellcheck source=deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
MUTANTS=$SNOWFLEET_ROOT/integration/mutants/mutants.sh

# Reproducible Go builds: no cgo, no paths, no VCS stamp, no build ID, files
# in the build context with a fixed mtime. The version (shown by INFO,
# /status and the lease node) is the commit, so it is the same for the same
# tree: VERSION overrides it.
go_build() { # out-dir tags [source-dir [version-suffix]]
	local out=$1 tags=$2 src=${3:-$SNOWFLEET_ROOT} version revision
	local pkgs=(./cmd/snowflaked ./cmd/snowflakectl)
	# Chaos builds (test only) also carry the embedded lease's example, which
	# the chaos suite runs beside the workers; the production image does not.
	if [[ " $tags " == *" chaos "* ]]; then pkgs+=(./cmd/idlease-example); fi
	version=${VERSION:-$(git -C "$SNOWFLEET_ROOT" describe --always --dirty 2>/dev/null || echo dev)}${4:-}
	# snowflake_build_info{revision}: the commit (the VCS stamp is off).
	revision=$(git -C "$SNOWFLEET_ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
	mkdir -p "$out"
	(cd "$src" &&
		CGO_ENABLED=0 GOOS=linux GOFLAGS=-buildvcs=false go build -trimpath -tags "$tags" \
			-ldflags="-s -w -buildid= -X main.version=$version -X main.revision=$revision" -o "$out/" "${pkgs[@]}") || return 1
	touch -d @0 "$out"/*
}

build_worker() { # image tags [source-dir [version-suffix [docker-build-args...]]]
	local image=$1 tags=$2 src=${3:-} suffix=${4:-} ctx size
	shift $(($# < 4 ? $# : 4))
	ctx=$(mktemp -d)
	log "building $image (go build -tags '$tags'${src:+ in $src})"
	go_build "$ctx" "$tags" "$src" "$suffix" || { rm -rf "$ctx"; die "go build failed"; }
	cp "$SNOWFLEET_ROOT/deploy/worker/Dockerfile" "$ctx/Dockerfile"
	if [[ -e $ctx/idlease-example ]]; then echo 'COPY idlease-example /' >>"$ctx/Dockerfile"; fi
	touch -d @0 "$ctx/Dockerfile"
	size=$(du -ch "$ctx/snowflaked" "$ctx/snowflakectl" | tail -1 | cut -f1)
	docker_build "$@" -t "$image" "$ctx" || { rm -rf "$ctx"; die "docker build of $image failed"; }
	rm -rf "$ctx"
	log "built $image ($size of binaries)"
}

# build_mutant builds the chaos worker from a scratch copy of the tree with
# the mutant's patch applied, labelled snowfleet.mutant=<name> (the suite
# checks the label of every worker it runs as that mutant).
build_mutant() { # name
	local name=$1 src
	src=$(mktemp -d)
	"$MUTANTS" tree "$name" "$src" || { rm -rf "$src"; die "mutant $name: the patch does not apply"; }
	build_worker "$MUTANT_IMAGE-$name" chaos "$src" "-mutant-$name" --label "snowfleet.mutant=$name"
	rm -rf "$src"
}

# docker_build runs the legacy builder offline, quiet unless it fails.
docker_build() {
	local out
	if ! out=$(docker build --pull=false -q "$@" 2>&1); then
		printf '%s\n' "$out" >&2
		return 1
	fi
}

# make_rootfs writes the cached tarball of a minimal Debian with Java 17 and
# ZooKeeper's jars (libzookeeper-java: the zookeeper package would pull a
# desktop JRE in through default-jre).
make_rootfs() { # tarball
	local tarball=$1 root
	[[ $(id -u) == 0 ]] || die "debootstrap needs root (or set ZK_IMAGE to a ZooKeeper image you have)"
	if ! command -v debootstrap >/dev/null; then
		command -v apt-get >/dev/null || die "debootstrap is not installed"
		log "installing debootstrap"
		apt-get install -y debootstrap >/dev/null 2>&1 ||
			{ apt-get update >/dev/null && apt-get install -y debootstrap >/dev/null; } ||
			die "cannot install debootstrap (apt-get install -y debootstrap)"
	fi
	# Without the keyring debootstrap only warns and goes on unchecked.
	[[ -s $DEBIAN_KEYRING ]] ||
		die "the archive keyring $DEBIAN_KEYRING is missing: debootstrap would not check the archive's signatures (apt-get install -y debian-archive-keyring, or DEBIAN_KEYRING=<the keyring of your mirror's archive>)"
	root=$(mktemp -d "$SNOWFLEET_CACHE/rootfs.XXXXXX")
	log "debootstrap $DEBIAN_SUITE into $root (about a minute; signatures checked with $DEBIAN_KEYRING)"
	debootstrap --variant=minbase --force-check-gpg --keyring="$DEBIAN_KEYRING" \
		--include=openjdk-17-jre-headless,libzookeeper-java \
		"$DEBIAN_SUITE" "$root" "$DEBIAN_MIRROR" >"$SNOWFLEET_CACHE/debootstrap.log" 2>&1 ||
		{ tail -20 "$SNOWFLEET_CACHE/debootstrap.log" >&2; rm -rf "$root"; die "debootstrap failed (log: $SNOWFLEET_CACHE/debootstrap.log)"; }
	# What a server never reads.
	rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
		"$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
		"$root"/var/log/* "$root"/tmp/* "$root"/usr/share/maven-repo
	tar --numeric-owner --sort=name -C "$root" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
	rm -rf "$root"
	log "rootfs cached in $tarball ($(du -h "$tarball" | cut -f1))"
}

# base_age_days is how many whole days ago the base image was made.
base_age_days() {
	local created
	created=$(docker image inspect -f '{{.Created}}' "$ZK_BASE_IMAGE")
	echo $((($(date +%s) - $(date -d "$created" +%s)) / 86400))
}

# ensure_base makes the debootstrapped base image the ZooKeeper and
# Prometheus images build on, once, and again once it is older than
# BASE_MAX_AGE_DAYS.
ensure_base() {
	local tarball="$SNOWFLEET_CACHE/zookeeper-rootfs-$DEBIAN_SUITE.tar"
	if [[ ${REBUILD_BASE:-} == 1 ]]; then
		rm -f "$tarball"
		docker image rm "$ZK_BASE_IMAGE" >/dev/null 2>&1 || true
	fi
	local age
	if image_exists "$ZK_BASE_IMAGE"; then
		age=$(base_age_days)
		if ((age > BASE_MAX_AGE_DAYS)); then
			log "base $ZK_BASE_IMAGE is $age days old (over BASE_MAX_AGE_DAYS=$BASE_MAX_AGE_DAYS): rebuilding it for Debian's security updates"
			rm -f "$tarball"
			docker image rm "$ZK_BASE_IMAGE" >/dev/null 2>&1 || true
		fi
	fi
	if image_exists "$ZK_BASE_IMAGE"; then
		log "base $ZK_BASE_IMAGE exists, made $age day(s) ago (rebuilt past $BASE_MAX_AGE_DAYS): no debootstrap"
	else
		mkdir -p "$SNOWFLEET_CACHE"
		[[ -f $tarball ]] || make_rootfs "$tarball"
		log "importing $tarball as $ZK_BASE_IMAGE"
		docker import - "$ZK_BASE_IMAGE" <"$tarball" >/dev/null
	fi
}

build_zookeeper() {
	if [[ $ZK_IMAGE != snowfleet/* ]]; then
		image_exists "$ZK_IMAGE" || die "ZK_IMAGE=$ZK_IMAGE is not a local image and nothing can be pulled"
		log "using $ZK_IMAGE for ZooKeeper"
		return
	fi
	ensure_base
	# The image records what it was made from; the same inputs again are a no-op.
	local inputs
	inputs=$( (docker image inspect -f '{{.Id}}' "$ZK_BASE_IMAGE" && cat "$SNOWFLEET_ROOT"/deploy/zookeeper/*) | sha256sum | cut -c1-16)
	if [[ $(docker image inspect -f '{{index .Config.Labels "snowfleet.inputs"}}' "$ZK_IMAGE" 2>/dev/null) == "$inputs" ]]; then
		log "$ZK_IMAGE is up to date"
		return
	fi
	log "building $ZK_IMAGE"
	docker_build --build-arg "BASE=$ZK_BASE_IMAGE" --label "snowfleet.inputs=$inputs" -t "$ZK_IMAGE" "$SNOWFLEET_ROOT/deploy/zookeeper" ||
		die "docker build of $ZK_IMAGE failed"
	log "built $ZK_IMAGE"
}

# build_prometheus puts Debian's prometheus binary (installed when missing)
# and the fleet's configuration on the base image.
build_prometheus() {
	if [[ $PROMETHEUS_IMAGE != snowfleet/* ]]; then
		image_exists "$PROMETHEUS_IMAGE" || die "PROMETHEUS_IMAGE=$PROMETHEUS_IMAGE is not a local image and nothing can be pulled"
		log "using $PROMETHEUS_IMAGE for Prometheus"
		return
	fi
	if [[ ! -x /usr/bin/prometheus ]]; then
		[[ $(id -u) == 0 ]] && command -v apt-get >/dev/null || die "install Debian's prometheus package (apt-get install -y prometheus)"
		log "installing prometheus (Debian's package: its binary goes into the image)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 ||
			{ apt-get update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus >/dev/null; } ||
			die "cannot install prometheus"
		service prometheus stop >/dev/null 2>&1 || true
	fi
	ensure_base
	local ctx inputs
	ctx=$(mktemp -d)
	cp /usr/bin/prometheus "$SNOWFLEET_ROOT"/deploy/prometheus/{Dockerfile,prometheus.yml,rules.yml} "$ctx/"
	inputs=$( (docker image inspect -f '{{.Id}}' "$ZK_BASE_IMAGE" && cat "$ctx"/*) | sha256sum | cut -c1-16)
	if [[ $(docker image inspect -f '{{index .Config.Labels "snowfleet.inputs"}}' "$PROMETHEUS_IMAGE" 2>/dev/null) == "$inputs" ]]; then
		rm -rf "$ctx"
		log "$PROMETHEUS_IMAGE is up to date"
		return
	fi
	log "building $PROMETHEUS_IMAGE"
	docker_build --build-arg "BASE=$ZK_BASE_IMAGE" --label "snowfleet.inputs=$inputs" -t "$PROMETHEUS_IMAGE" "$ctx" ||
		{ rm -rf "$ctx"; die "docker build of $PROMETHEUS_IMAGE failed"; }
	rm -rf "$ctx"
	log "built $PROMETHEUS_IMAGE"
}

# clean removes the images this script makes (a ZK_IMAGE not ours is left
# alone), the ZooKeeper base and the cached rootfs: the next build is cold.
clean() {
	local images=("$WORKER_IMAGE" "$CHAOS_IMAGE" "$ZK_BASE_IMAGE") n
	for n in $("$MUTANTS" names); do images+=("$MUTANT_IMAGE-$n"); done
	if [[ $ZK_IMAGE == snowfleet/* ]]; then images+=("$ZK_IMAGE"); fi
	if [[ $PROMETHEUS_IMAGE == snowfleet/* ]]; then images+=("$PROMETHEUS_IMAGE"); fi
	for i in "${images[@]}"; do
		if docker image rm "$i" >/dev/null 2>&1; then log "removed $i"; fi
	done
	rm -rf "$SNOWFLEET_CACHE"
	log "removed $SNOWFLEET_CACHE"
}

main() {
	local what=("$@")
	((${#what[@]})) || what=(worker chaos zookeeper prometheus)
	command -v docker >/dev/null || die "docker is not installed"
	for w in "${what[@]}"; do
		case $w in
		worker) build_worker "$WORKER_IMAGE" "" ;;
		chaos) build_worker "$CHAOS_IMAGE" chaos ;;
		mutant) for n in $("$MUTANTS" names); do build_mutant "$n"; done ;;
		mutant-*) build_mutant "${w#mutant-}" ;;
		zookeeper) build_zookeeper ;;
		prometheus) build_prometheus ;;
		clean) clean ;;
		*) die "unknown image '$w' (want worker, chaos, mutant, mutant-<name>, zookeeper, prometheus, or clean)" ;;
		esac
	done
}

main "$@"
