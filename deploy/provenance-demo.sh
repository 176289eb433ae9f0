#!/usr/bin/env bash
# provenance-demo.sh: the provenance tools on a fleet that had a kill, a
# pause and a restore from a backup (deploy/runbook.md, "An ID was issued
# twice, or one we did not expect showed up"). A local ZooKeeper and three
# workers of datacenter 3 on loopback: IDs drawn from each; worker 1 killed
# with SIGKILL and worker 4 started; worker 2 stopped 12 s (past its 6 s
# session) and continued; ZooKeeper's data copied, 45 s on, put back, and
# snowflakectl recover run; then history export, whois of an ID from each
# of those moments and of a forged one, and audit of every ID drawn (with
# one row stored twice and the forged ID added). About 3 minutes; needs
# Java, Debian's zookeeper and redis-cli (make deps). KEEP=1 keeps the logs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=deploy/localzk.sh
source "$root/deploy/localzk.sh"
localzk_scratch provenance-demo
fail() { echo "provenance-demo: $*" >&2; exit 1; }
for tool in go java redis-cli curl; do command -v "$tool" >/dev/null || fail "$tool is missing (make deps)"; done
bin=$tmp/bin
(cd "$root" && CGO_ENABLED=0 go build -o "$bin/" ./cmd/snowflaked ./cmd/snowflakectl)
localzk_init "$tmp/zk"
localzk_start "$tmp/zk"
zk=127.0.0.1:$zkport
ctl() { echo "\$ snowflakectl $*" | sed "s#$tmp#\$tmp#g; s#$zk#zk:2181#g"; "$bin/snowflakectl" "$@"; }
"$bin/snowflakectl" init --zk "$zk" --zk-insecure --new-fleet --datacenters 3 >/dev/null 2>&1
declare -A wpid
base=$((24000 + RANDOM % 4000))
port() { echo $((base + 10 * $1)); }
start() {
	local p; p=$(port "$1")
	"$bin/snowflaked" --zk "$zk" --zk-insecure --datacenter 3 \
		--listen "127.0.0.1:$p" --http "127.0.0.1:$((p + 1))" >>"$tmp/w$1.log" 2>&1 &
	wpid[$1]=$!; pids+=($!)
}
serves() { [[ $(timeout 0.3 redis-cli -p "$(port "$1")" NEXTID 2>/dev/null) =~ ^[0-9]+$ ]]; }
await() { local d=$((SECONDS + $2)); until serves "$1"; do ((SECONDS < d)) || fail "worker $1 does not serve after $2 s: $(tail -2 "$tmp/w$1.log")"; sleep 0.1; done; }
# draw W LABEL: 1000 IDs from worker W into ids.txt, and one of them kept as $LABEL
draw() {
	redis-cli -p "$(port "$1")" NEXTIDS 1000 >"$tmp/batch"
	grep -qE '^[0-9]+$' "$tmp/batch" || fail "worker $1 answered $(head -1 "$tmp/batch")"
	cat "$tmp/batch" >>"$tmp/ids.txt"
	printf -v "$2" '%s' "$(sed -n 500p "$tmp/batch")"
	echo "# worker $1 (pid ${wpid[$1]}) issued $2=$(sed -n 500p "$tmp/batch")"
}
for i in 1 2 3; do start $i; done
for i in 1 2 3; do await $i 60; done
draw 1 A1; draw 2 B1; draw 3 C1
echo "# kill -9 worker 1; worker 4 started"
{ kill -9 "${wpid[1]}" && wait "${wpid[1]}"; } 2>/dev/null || true; start 4; await 4 60
draw 4 D1
echo "# worker 2 paused 12 s (past its 6 s session), then continued"
kill -STOP "${wpid[2]}"; sleep 12; kill -CONT "${wpid[2]}"; sleep 1; await 2 60
draw 2 B2; draw 3 C2
echo "# backup: ZooKeeper stopped, its data copied, started again; 45 s on (past the reservations the copy holds)"
localzk_stop; cp -a "$tmp/zk/version-2" "$tmp/backup"; localzk_start "$tmp/zk"
sleep 45
draw 2 B3; draw 4 D2
echo "# restore: ZooKeeper stopped, the backup's data put back, started again"
localzk_stop; rm -rf "$tmp/zk/version-2"; cp -a "$tmp/backup" "$tmp/zk/version-2"; localzk_start "$tmp/zk"
sleep 5
for i in 2 3 4; do echo "# worker $i /readyz: $(curl -s "127.0.0.1:$(($(port $i) + 1))/readyz")"; done
ctl recover --zk "$zk" --yes
for i in 2 3 4; do await $i 120; done
draw 2 B4; draw 3 C4; draw 4 D4
FORGED=$((C4 + (3600000 << 22)))  # worker 3's slot, an hour past its ceiling
echo "$B1" >>"$tmp/ids.txt"   # a row stored twice
echo "$FORGED" >>"$tmp/ids.txt"
echo
ctl history export --zk "$zk" --out "$tmp/history.json"
echo
ctl whois --history "$tmp/history.json" "$A1" "$D1" "$B1" "$B2" "$B3" "$B4" "$FORGED" || true
echo
ctl audit --history "$tmp/history.json" "$tmp/ids.txt" || true
echo
