#!/usr/bin/env bash
# docs-check.sh (make docs-check): runs what the READMEs show against a
# scratch fleet and compares the parts of the output that do not vary.
#
#  1. deploy/README.md's "Run three workers by hand" block, as written, with
#     its paths moved under a scratch directory and its ports moved to free
#     ones: a standalone ZooKeeper from Debian's jars, the binaries, init,
#     three workers.
#  2. Every transcript line "$ snowflakectl encode|decode|range ...",
#     "$ snowflaked ..." (the flag errors) and "$ redis-cli -p 7609 <command>"
#     whose output does not depend on the clock or the slot (DECODE and
#     IDRANGE of given IDs and times, the errors, PING): its output must match the README's lines exactly (a
#     line "..." in the README ends the comparison there).
#  3. The shape of what varies: INFO's keys, the slot map's header line, the
#     start log's messages and keys.
#  4. deploy/runbook.md's two disaster sections, their by-hand blocks as
#     written (docs-check-runbook.sh): ZooKeeper restored from a copy of its
#     data directory, then wiped; each time every worker must serve again,
#     and no ID issued after may be below one issued before.
#
# It needs Go, Java, Debian's zookeeper package and redis-cli (make deps);
# a missing one fails the check. No Docker. SNOWFLEET_SKIP_ZK=1 skips it, as
# it skips make check's ZooKeeper tests (refused with CI=true).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

fail() { printf 'docs-check: %s\n' "$*" >&2; exit 1; }
# The one opt-out is make check's for the ZooKeeper tests, which CI refuses.
if [[ ${SNOWFLEET_SKIP_ZK:-} == 1 ]]; then
	[[ ${CI:-} != true ]] || fail "SNOWFLEET_SKIP_ZK=1 is refused with CI=true"
	echo "docs-check: SKIPPED by request (SNOWFLEET_SKIP_ZK=1): it needs ZooKeeper"
	exit 0
fi
for tool in go java redis-cli curl awk; do
	command -v "$tool" >/dev/null || fail "$tool is missing (make deps installs the Debian packages)"
done
[[ -r /usr/share/java/zookeeper.jar ]] || fail "/usr/share/java/zookeeper.jar is missing: apt-get install zookeeper (make deps)"

tmp=$(mktemp -d)
# The blocks run leave ZooKeeper and the workers running, their pids in
# files (zk.pid changes when the runbook's blocks restart ZooKeeper).
cleanup() {
	local pid pids
	pids=$(cat "$tmp/zk/workers.pid" "$tmp/zk/zk.pid" 2>/dev/null || true)
	for pid in $pids; do kill "$pid" 2>/dev/null || true; done
	for pid in $pids; do tail --pid="$pid" -f /dev/null 2>/dev/null & done
	wait
	rm -rf "$tmp"
}
trap cleanup EXIT

# free_port prints a loopback port nothing listens on, and the one above it
# free too (a worker's admin port is its ID port + 1).
taken=" "
free_port() {
	local p
	for _ in $(seq 50); do
		p=$((20000 + RANDOM % 20000))
		[[ $taken != *" $p "* && $taken != *" $((p + 1)) "* ]] || continue
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && ! (exec 3<>"/dev/tcp/127.0.0.1/$((p + 1))") 2>/dev/null; then
			taken+="$p $((p + 1)) "
			echo "$p"
			return
		fi
	done
	fail "no free port found"
}

# wait_for runs its arguments until they succeed, for at most 30 s
# ($wait_secs).
wait_for() {
	local deadline=$((SECONDS + ${wait_secs:-30}))
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || fail "timed out waiting for: $*"
		sleep 0.2
	done
}

zkport=$(free_port)
zkport2=$(free_port)
workers=("$(free_port)" "$(free_port)" "$(free_port)")
idport=${workers[0]}
httpport=$((idport + 1))

# substitute moves a block's paths under $tmp and its ports to free ones:
# ZooKeeper's 2181 (and the runbook's second client port, 2182), the
# workers' 7609, 7619, 7629 (admin ports one above: 7610 for the first).
substitute() {
	sed -e "s#/tmp/zk#$tmp/zk#g" \
		-e "s#2181#$zkport#g" -e "s#2182#$zkport2#g" \
		-e "s#7609#${workers[0]}#g" -e "s#7610#$httpport#g" \
		-e "s#7619#${workers[1]}#g" -e "s#7629#${workers[2]}#g" \
		-e "s#-o \\. #-o $tmp/ #" \
		-e "s#\\./snowflake#$tmp/snowflake#g"
}

# 1. The by-hand block: the first sh block after its heading.
awk '/^## Run three workers by hand/ {inside = 1} inside && /^```sh/ {block = 1; next} block && /^```/ {exit} block {print}' \
	deploy/README.md >"$tmp/byhand.sh"
[[ -s $tmp/byhand.sh ]] || fail "deploy/README.md: no sh block under \"Run three workers by hand\""
grep -q 'QuorumPeerMain' "$tmp/byhand.sh" || fail "deploy/README.md: the by-hand block starts no ZooKeeper"
for p in 7609 7619 7629; do
	grep -q "$p" "$tmp/byhand.sh" || fail "deploy/README.md: the by-hand block names no worker port $p"
done
# init must wait for ZooKeeper, which the block starts in the background.
substitute <"$tmp/byhand.sh" |
	sed "/snowflakectl init/i until (exec 3<>/dev/tcp/127.0.0.1/$zkport) 2>/dev/null; do sleep 0.2; done" >"$tmp/run.sh"
echo "docs-check: the by-hand block of deploy/README.md (ZooKeeper on $zkport, workers on ${workers[*]})"
bash -e "$tmp/run.sh" || fail "the by-hand block failed"
for p in "${workers[@]}"; do
	wait_for "$tmp/snowflakectl" health --http "127.0.0.1:$((p + 1))" -q
	redis-cli -p "$p" NEXTID | grep -qE '^[0-9]+$' || fail "the by-hand worker on $p serves no ID: $(cat "$tmp/zk/worker-$p.log")"
	grep -q 'serving slot' "$tmp/zk/worker-$p.log" || fail "the by-hand worker on $p logged no 'serving slot'"
done

# 2. Transcripts. Each README's fenced blocks: "$ cmd" lines, then the lines
# it printed, up to the next "$ " or the fence.
export PATH="$tmp:$PATH"
docs=(README.md cmd/snowflakectl/README.md worker/README.md)
docs+=(cmd/snowflaked/README.md)
checked=0
bad=0
det='^((SNOWFLAKE_[A-Z_]+=[^ ]+ )?snowflaked( |$)|snowflakectl (encode|decode|range) |redis-cli -p 7609 (PING$|DECODE [0-9]{19}$|DECODE [0-9a-zA-Z]{13}$|IDRANGE |NEXTIDS 0$|NEXTIDS$|NEXTRANGE 4097$|FOO$|NEXTID BASE64$))'
# A transcript is in a fenced block, or indented by four spaces.
for doc in "${docs[@]}"; do
	awk -v out="$tmp/t.${doc//\//_}" '
		function flush() { if (cmd != "") { close(file ".cmd"); close(file ".want") } cmd = "" }
		function start(c) { flush(); cmd = c; n++; file = out "." n; print cmd > (file ".cmd"); printf "" > (file ".want") }
		/^```/ { flush(); fence = !fence; next }
		fence && /^\$ / { start(substr($0, 3)); next }
		fence { if (cmd != "") print > (file ".want"); next }
		/^    \$ / { start(substr($0, 7)); next }
		/^    / { if (cmd != "") print substr($0, 5) > (file ".want"); next }
		{ flush() }
	' "$doc"
done
for c in "$tmp"/t.*.cmd; do
	[[ -e $c ]] || continue
	cmd=$(cat "$c")
	[[ $cmd =~ $det ]] || continue
	want=${c%.cmd}.want
	run=${cmd//-p 7609/-p $idport}
	# A command that would start a daemon ends after 10 s, and differs.
	got=$(timeout 10 bash -c "$run" 2>&1 || true)
	# redis-cli ends an error with an empty line; the READMEs do not show it.
	got=$(printf '%s\n' "$got" | sed '/^$/d')
	if grep -qx '\.\.\.' "$want"; then
		n=$(($(grep -nx '\.\.\.' "$want" | head -1 | cut -d: -f1) - 1))
		wanted=$(head -n "$n" "$want")
		got=$(printf '%s\n' "$got" | head -n "$n")
	else
		wanted=$(sed '/^$/d' "$want")
	fi
	checked=$((checked + 1))
	if [[ $got != "$wanted" ]]; then
		bad=$((bad + 1))
		where=$(basename "$c" .cmd)
		printf 'docs-check: %s: $ %s\n--- the README shows\n%s\n--- it prints\n%s\n\n' "$where" "$cmd" "$wanted" "$got" >&2
	fi
done
((checked > 20)) || fail "only $checked transcript commands found: did the READMEs' transcripts move?"

# 3. What varies: the keys INFO shows, the slot map's header.
want_keys=$(awk '/^\$ redis-cli -p 7609 INFO$/ {on = 1; next} on && /^(\$ |```)/ {exit} on && /:/ {sub(/:.*/, ""); print}' worker/README.md)
got_keys=$(redis-cli -p "$idport" INFO | tr -d '\r' | awk '/:/ {sub(/:.*/, ""); print}')
[[ -n $want_keys ]] || fail "worker/README.md shows no INFO output"
if [[ $want_keys != "$got_keys" ]]; then
	bad=$((bad + 1))
	printf 'docs-check: worker/README.md: INFO keys differ\n%s\n' "$(diff <(echo "$want_keys") <(echo "$got_keys") || true)" >&2
fi
want_head=$(grep -m1 -E '^SLOT +KIND +PROGRAM' cmd/snowflakectl/README.md | tr -s ' ')
got_head=$(snowflakectl slots --zk "127.0.0.1:$zkport" | grep -m1 '^SLOT' | tr -s ' ')
if [[ $want_head != "$got_head" ]]; then
	bad=$((bad + 1))
	printf 'docs-check: cmd/snowflakectl/README.md: the slot map header is\n  %s\nand slots prints\n  %s\n' "$want_head" "$got_head" >&2
fi

# The start log: each line's level, logger, message and keys (not the values),
# in any order (the ID server and the coordinator start side by side).
shape() { sed -E 's/^[0-9T:.Z-]+ //; s/=("[^"]*"|\[[^]]*\]|[^ ]*)/=/g' | LC_ALL=C sort; }
want_log=$(awk '/^## Lifecycle/ {on = 1} on && /^```/ {if (block) exit; block = 1; next} block {print}' cmd/snowflaked/README.md | shape)
[[ -n $want_log ]] || fail "cmd/snowflaked/README.md shows no start log under Lifecycle"
got_log=$(head -n "$(printf '%s\n' "$want_log" | wc -l)" "$tmp/zk/worker-$idport.log" | shape)
if [[ $want_log != "$got_log" ]]; then
	bad=$((bad + 1))
	printf 'docs-check: cmd/snowflaked/README.md: the start log differs (values left out)\n%s\n' "$(diff <(echo "$want_log") <(echo "$got_log") || true)" >&2
fi

((bad == 0)) || fail "$bad of $((checked + 3)) checks differ from the READMEs"
echo "docs-check: the by-hand block ran, $checked transcript commands and 3 shapes match"

# 4. The runbook's disaster sections.
source deploy/docs-check-runbook.sh
echo "docs-check: ok: the by-hand block ran, $checked transcript commands and 3 shapes match, the runbook's two disaster sections ran ($rehearsals)"
