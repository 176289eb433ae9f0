#!/usr/bin/env bash
# heal-bench.sh (make heal-bench): how long one worker of a by-hand fleet
# stops serving after each fault, with the default flags, in a datacenter
# that is full (32 workers), full with a standby waiting (33), or has a
# free slot (31). One line per fault and fleet: the longest stretch in
# seconds without an ID, polling NEXTID every 20 ms on the faulted worker's
# port (and the standby's), counted from the SIGCONT of a pause (what the
# pause costs after it; with a standby, from the SIGSTOP: the standby takes
# the slot over) or from a kill -9 (a new process started at once on the
# same ports).
#
# usage: deploy/heal-bench.sh [BIN]   BIN: a directory holding snowflaked
#   and snowflakectl (default: built from this tree), e.g. an older build,
#   to compare. Needs Java, Debian's zookeeper and redis-cli (make deps).
#   FLEETS: which of full, full+standby, one-free-slot (default all).
#   PAUSE: seconds the worker is stopped (default 12, twice the session
#   timeout). KEEP=1 keeps the workers' logs. Takes about 4 minutes.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PAUSE=${PAUSE:-12}
# shellcheck source=deploy/localzk.sh
source "$root/deploy/localzk.sh"
localzk_scratch heal-bench
fail() { printf 'heal-bench: %s\n' "$*" >&2; exit 1; }
for tool in go java redis-cli; do command -v "$tool" >/dev/null || fail "$tool is missing (make deps)"; done

bin=${1:-}
if [[ -z $bin ]]; then
	bin=$tmp/bin
	(cd "$root" && CGO_ENABLED=0 go build -o "$bin/" ./cmd/snowflaked ./cmd/snowflakectl)
fi
localzk_init "$tmp/zk"
localzk_start "$tmp/zk"

declare -A wpid # worker number -> pid
base=$((24000 + RANDOM % 4000))
port() { echo $((base + 10 * $1)); }
start() {
	local p
	p=$(port "$1")
	"$bin/snowflaked" --zk "127.0.0.1:$zkport" --zk-root "$zroot" --zk-insecure --datacenter "$dc" \
		--listen "127.0.0.1:$p" --http "127.0.0.1:$((p + 1))" >>"$tmp/w$1.log" 2>&1 &
	wpid[$1]=$!
	pids+=($!)
}
# crash kills worker $1 with SIGKILL and reaps it (quietly).
crash() { { kill -9 "${wpid[$1]}" && wait "${wpid[$1]}"; } 2>/dev/null || true; }
serves() { [[ $(timeout 0.3 redis-cli -p "$(port "$1")" NEXTID 2>/dev/null) =~ ^[0-9]+$ ]]; }
await() { # worker number, seconds
	local deadline=$((SECONDS + $2))
	until serves "$1"; do
		((SECONDS < deadline)) || fail "worker $1 does not serve after $2 s (log: $(tail -2 "$tmp/w$1.log"))"
		sleep 0.1
	done
}
# cost T0 WORKER...: the longest stretch without an ID from any of the
# workers, counted from T0 (date +%s.%N): to the first ID after T0, or
# between two IDs after it. A continued process may serve a moment from its
# old lease before it finds the lease lost, so the polling goes on until
# IDs have flowed for 10 s since the last stretch of a second or more (at
# most 90 s).
cost() {
	local t0=$1 last=$1 worst=0 since=$1 now w ok
	shift
	while :; do
		ok=
		for w in "$@"; do serves "$w" && ok=1 && break; done
		now=$(date +%s.%N)
		if [[ -n $ok ]]; then
			read -r worst since < <(awk -v l="$last" -v n="$now" -v w="$worst" -v s="$since" \
				'BEGIN { g = n - l; if (g > w) w = g; if (g >= 1) s = n; printf "%.3f %s\n", w, s }')
			last=$now
		fi
		awk -v n="$now" -v s="$since" -v t="$t0" -v ok="$ok" \
			'BEGIN { exit !((ok != "" && s > t && n - s >= 10) || n - t >= 90) }' && break
		sleep 0.02
	done
	printf '%.1f' "$worst"
}
row() { printf '%-15s %-20s %-38s %s\n' "$1" "$2" "$3" "$4"; }

# fleet NAME DC WORKERS: a new root owning datacenter DC (one per fleet: two
# roots of one ensemble may not share one) and WORKERS workers in it (the
# 33rd stands by), then the two faults. Without a standby the gap
# is the faulted worker's own, from the SIGCONT or the restart; with one
# it is the slot's, from the fault until the standby serves it.
fleet() {
	local name=$1 n=$3 i t0
	dc=$2 zroot=/heal-$name
	"$bin/snowflakectl" init --zk "127.0.0.1:$zkport" --zk-root "$zroot" --zk-insecure --new-fleet --datacenters "$dc" >/dev/null 2>"$tmp/init.err" ||
		fail "init: $(cat "$tmp/init.err")"
	for ((i = 1; i <= n && i <= 32; i++)); do start "$i"; done
	for ((i = 1; i <= n && i <= 32; i++)); do await "$i" 60; done
	((n <= 32)) || start 33 # the standby: every slot is held by now
	sleep 3 # the standby, if any, is seen by the holders' renews

	if ((n > 32)); then
		t0=$(date +%s.%N)
		kill -STOP "${wpid[1]}"
		cost "$t0" 33 1 >"$tmp/cost" &
		sleep "$PAUSE"
		kill -CONT "${wpid[1]}"
		wait $!
		row "$name" "pause ${PAUSE}s" "from SIGSTOP, the standby taking over" "$(cat "$tmp/cost")"
	else
		kill -STOP "${wpid[1]}"
		sleep "$PAUSE"
		kill -CONT "${wpid[1]}"
		row "$name" "pause ${PAUSE}s" "from SIGCONT" "$(cost "$(date +%s.%N)" 1)"
	fi
	sleep 3

	if ((n > 32)); then
		t0=$(date +%s.%N)
		crash 2 # worker 1 now stands by, and the new process too
		start 2
		row "$name" "kill -9, restarted" "from the kill, a standby taking over" "$(cost "$t0" 1 2)"
	else
		t0=$(date +%s.%N)
		crash 1
		start 1
		row "$name" "kill -9, restarted" "from the kill" "$(cost "$t0" 1)"
	fi
	for ((i = 1; i <= n; i++)); do kill "${wpid[$i]}" 2>/dev/null || true; done
	for ((i = 1; i <= n; i++)); do wait "${wpid[$i]}" 2>/dev/null || true; done
}

row fleet fault "counted" "longest stretch without IDs"
for f in ${FLEETS:-full full+standby one-free-slot}; do
	case $f in
	full) fleet full 0 32 ;;
	full+standby) fleet full+standby 1 33 ;;
	one-free-slot) fleet one-free-slot 2 31 ;;
	*) fail "unknown fleet $f (full, full+standby, one-free-slot)" ;;
	esac
done
