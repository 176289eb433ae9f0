#!/usr/bin/env bash
# install-deps.sh (make deps; make check and .ci/run run it first): puts in place
# what the tests need on a Debian machine, doing nothing that is already done:
#   - the Debian packages below, only those missing (apt-get, as root or by sudo);
#   - stops the services Debian starts with them: the tests start their own;
#   - starts dockerd when it is installed but not running (the integration suite).
# SNOWFLEET_SKIP_ZK=1 leaves ZooKeeper out and SNOWFLEET_SKIP_DOCKER=1 Docker:
# their tests then skip, and make check says so at the end. CI=true forbids both.
set -euo pipefail
# shellcheck source=deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The one list of packages the tests need (.ci/run and make check both come here).
#   zookeeper      the server integration/zktest starts (brings java in)
#   redis-tools    redis-cli and redis-benchmark, the real clients of the RESP tests
#   redis-server   Redis itself, the baseline of make bench-server
#   debootstrap    the ZooKeeper image the integration suite builds (make up too)
#   debian-archive-keyring  the keys debootstrap checks the archive's signatures with
#                  (deploy/build-images.sh refuses to debootstrap without them)
#   haproxy, python3-redis, node-redis
#                  the L4 balancer and the client libraries, not ours, that
#                  integration/clients draws IDs with
#   spin, gcc      make model: Spin model-checks coordinator/model/lease.pml, gcc builds its verifier
#   prometheus     promtool (make rules: the alert rules and their unit tests)
#                  and the server the compose stack's Prometheus image copies
#   chromium       headless, renders /slots in the slot-map page's test
#   curl, python3-requests
#                  IDs over HTTP (--http-ids): worker/ and integration/clients
#                  test with curl, and run the cookbook's requests snippet
#   iproute2       ss: the kernel's memory for the worker's connections
#                  (TestHostileUnreadReplies)
#   util-linux     chrt: the latency tests' load at idle priority (testenv.IdleCommand)
packages=(redis-server redis-tools debootstrap debian-archive-keyring haproxy python3-redis node-redis spin gcc prometheus chromium curl python3-requests iproute2 util-linux)
[[ ${SNOWFLEET_SKIP_ZK:-} == 1 ]] || packages=(zookeeper "${packages[@]}")

if [[ ${CI:-} == true ]]; then
	for v in SNOWFLEET_SKIP_ZK SNOWFLEET_SKIP_DOCKER; do
		[[ ${!v:-} != 1 ]] || die "$v=1 with CI=true: nothing may skip in CI"
	done
fi

as_root() {
	if [[ $(id -u) == 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		die "not root and no sudo: run as root: $*"
	fi
}

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
	command -v apt-get >/dev/null || die "no apt-get: install ${missing[*]} (or their equivalents) by hand"
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	as_root apt-get install -y --no-install-recommends "${missing[@]}" ||
		{ as_root apt-get update && as_root apt-get install -y --no-install-recommends "${missing[@]}"; }
fi
# Debian's redis-server starts a service on :6379; the tests start their own.
# A developer's Redis is left alone: only one just installed, or any in CI.
if [[ " ${missing[*]} " == *" redis-server "* || ${CI:-} == true ]]; then
	as_root service redis-server stop >/dev/null 2>&1 || true
fi
# Likewise HAProxy's and Prometheus's services: the tests and make up run
# their own.
for svc in haproxy prometheus; do
	if [[ " ${missing[*]} " == *" $svc "* || ${CI:-} == true ]]; then
		as_root service "$svc" stop >/dev/null 2>&1 || true
	fi
done

# Debian's prometheus package starts a server (and node exporter) on :9090;
# the tests and the compose stack run their own.
if [[ " ${missing[*]} " == *" prometheus "* || ${CI:-} == true ]]; then
	as_root service prometheus stop >/dev/null 2>&1 || true
fi

if [[ ${SNOWFLEET_SKIP_DOCKER:-} != 1 ]] && ! docker info >/dev/null 2>&1; then
	command -v dockerd >/dev/null || die "Docker is not installed (the integration suite needs it; SNOWFLEET_SKIP_DOCKER=1 skips it)"
	[[ $(id -u) == 0 ]] || die "dockerd is not running; start it (the integration suite needs it; SNOWFLEET_SKIP_DOCKER=1 skips it)"
	log "starting dockerd (log: /tmp/dockerd.log)"
	(dockerd >/tmp/dockerd.log 2>&1 &)
	for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
	docker info >/dev/null 2>&1 || die "dockerd did not come up in 60s (log: /tmp/dockerd.log)"
fi
