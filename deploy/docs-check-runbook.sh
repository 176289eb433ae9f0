# docs-check-runbook.sh: sourced by docs-check.sh (make docs-check) once the
# by-hand fleet of deploy/README.md runs (ZooKeeper on $zkport, workers on
# ${workers[@]}, the binaries in $tmp). It rehearses deploy/runbook.md's two
# disaster sections on that fleet, running each section's by-hand block as
# written (found by its marker, `<!-- docs-check: NAME -->` right above a
# fenced sh block; the same substitutions as the by-hand block):
#
#  - restored: ZooKeeper's data directory copied while the fleet serves (the
#    backup), the fleet moves on, then the block (stop ZooKeeper, restore the
#    copy, recover with the workers kept out, let them in);
#  - lost-data: ZooKeeper stopped, its data directory wiped, started again;
#    the workers' /readyz must say root_missing; then the block (init).
#
# Each time every worker must serve again once the ceilings of before have
# passed (so on a new lease), and every ID drawn after must be above every
# ID drawn before (none repeats).

# runbook_block NAME prints the sh block under the marker NAME, or fails.
runbook_block() {
	local marker="<!-- docs-check: $1 -->" out
	out=$(awk -v m="$marker" '
		$0 == m {found = 1; next}
		found && !block && /^```sh$/ {block = 1; next}
		found && !block && NF {exit}
		block && /^```/ {exit}
		block {print}
	' deploy/runbook.md)
	[[ -n $out ]] || fail "deploy/runbook.md: no \`\`\`sh block right under \"$marker\": did the section move?"
	printf '%s\n' "$out"
}

# draw_ids FILE appends 100 IDs from each worker to FILE.
draw_ids() {
	local p
	for p in "${workers[@]}"; do
		redis-cli -p "$p" NEXTIDS 100 | grep -E '^[0-9]+$' >>"$1" || fail "the worker on $p serves no ID: $(tail -5 "$tmp/zk/worker-$p.log")"
	done
}

# zk_restart stops the ZooKeeper of zk.pid and starts it again on zoo.cfg.
zk_restart() {
	local pid
	pid=$(cat "$tmp/zk/zk.pid")
	kill "$pid"
	tail --pid="$pid" -f /dev/null
	"$@"
	java -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$tmp/zk/zoo.cfg" >>"$tmp/zk/zk.log" 2>&1 &
	echo $! >"$tmp/zk/zk.pid"
	wait_for bash -c "exec 3<>/dev/tcp/127.0.0.1/$zkport"
}

# serve_again NAME BEFORE DOWN: every worker serves again once every
# ceiling of before has passed (ZooKeeper went away at DOWN, in $SECONDS;
# a ceiling reaches at most --horizon, 40 s, past the last renew), so an
# old lease cannot pass for a new one; every ID drawn then is above every
# ID in the file BEFORE. Says how long it took.
serve_again() {
	local name=$1 before=$2 down=$3 p low high
	if ((SECONDS < down + 41)); then
		echo "docs-check: $name: waiting $((down + 41 - SECONDS)) s for every ceiling of before to pass"
		sleep $((down + 41 - SECONDS))
	fi
	for p in "${workers[@]}"; do
		wait_secs=60 wait_for "$tmp/snowflakectl" health --http "127.0.0.1:$((p + 1))" -q
	done
	draw_ids "$tmp/$name.after"
	low=$(sort -n "$tmp/$name.after" | head -1)
	high=$(sort -n "$before" | tail -1)
	[[ $(printf '%s\n%s\n' "$high" "$low" | sort -n | tail -1) == "$low" && $low != "$high" ]] ||
		fail "$name: an ID drawn after ($low) is not above every ID drawn before ($high)"
	[[ -z $(sort "$before" "$tmp/$name.after" | uniq -d) ]] || fail "$name: an ID repeats"
	rehearsals+="${rehearsals:+; }$name: every worker serving $((SECONDS - down)) s after ZooKeeper went away ($((SECONDS - block_end)) s after the block), $(wc -l <"$before") IDs before, $(wc -l <"$tmp/$name.after") after, none repeated"
}

# run_block NAME runs the section's block as written (substituted), and
# keeps when it ended in block_end.
run_block() {
	runbook_block "$1" | substitute >"$tmp/$1.sh"
	echo "docs-check: the runbook's \"$1\" block:"
	sed 's/^/    /' "$tmp/$1.sh"
	bash -e "$tmp/$1.sh" || fail "deploy/runbook.md: the \"$1\" block failed"
	block_end=$SECONDS
}

rehearsals=
# restored: the backup, taken while serving; the fleet moves on past it.
draw_ids "$tmp/restored.before"
cp -a "$tmp/zk/data" "$tmp/zk/backup"
sleep 3
draw_ids "$tmp/restored.before"
down=$SECONDS
run_block restored
serve_again restored "$tmp/restored.before" "$down"

# lost-data: ZooKeeper comes back empty; the workers say so on /readyz.
draw_ids "$tmp/lost-data.before"
down=$SECONDS
zk_restart bash -c "rm -rf '$tmp/zk/data' && mkdir '$tmp/zk/data'"
for p in "${workers[@]}"; do
	wait_secs=60 wait_for bash -c "curl -s http://127.0.0.1:$((p + 1))/readyz | grep -q '^root_missing'"
done
run_block lost-data
serve_again lost-data "$tmp/lost-data.before" "$down"
