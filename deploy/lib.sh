# shellcheck shell=bash
# Shared settings of the deploy scripts: image names, the cache directory and
# the compose command. Sourced, never run.

SNOWFLEET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SNOWFLEET_CACHE=${SNOWFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/snowfleet}

# Images. ZK_IMAGE may name the official image (zookeeper:3.8) instead of
# ours: the compose file only uses the environment names both understand.
WORKER_IMAGE=${WORKER_IMAGE:-snowfleet/snowflaked:latest}
CHAOS_IMAGE=${CHAOS_IMAGE:-snowfleet/snowflaked:chaos}
MUTANT_IMAGE=${MUTANT_IMAGE:-snowfleet/snowflaked:mutant} # + -<name>
ZK_IMAGE=${ZK_IMAGE:-snowfleet/zookeeper:3.8}
ZK_BASE_IMAGE=${ZK_BASE_IMAGE:-snowfleet/zookeeper-base:bookworm}
PROMETHEUS_IMAGE=${PROMETHEUS_IMAGE:-snowfleet/prometheus:latest}
DEBIAN_SUITE=${DEBIAN_SUITE:-bookworm}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# The keys debootstrap checks every archive's signature with (forced: a
# mirror given without a keyring must not be trusted on the word of HTTP).
DEBIAN_KEYRING=${DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
# The debootstrapped base is rebuilt once older than this many days, so the
# JRE and ZooKeeper in the images get Debian's security updates.
BASE_MAX_AGE_DAYS=${BASE_MAX_AGE_DAYS:-7}
export WORKER_IMAGE CHAOS_IMAGE MUTANT_IMAGE ZK_IMAGE PROMETHEUS_IMAGE

# The legacy builder needs no registry for FROM scratch or a local base; the
# BuildKit front end would want to pull one, and buildx may not be installed.
export DOCKER_BUILDKIT=0

COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-snowfleet}
export COMPOSE_PROJECT_NAME

log() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# compose runs docker-compose v1 when present, else the docker compose plugin,
# always on the top-level compose file and the project name above.
compose() {
	if [[ -z ${_compose_cmd:-} ]]; then
		if command -v docker-compose >/dev/null 2>&1; then
			_compose_cmd=docker-compose
		elif docker compose version >/dev/null 2>&1; then
			_compose_cmd="docker compose"
		else
			die "neither docker-compose nor the docker compose plugin is installed"
		fi
	fi
	# shellcheck disable=SC2086
	$_compose_cmd -p "$COMPOSE_PROJECT_NAME" -f "$SNOWFLEET_ROOT/docker-compose.yml" "$@"
}

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }
