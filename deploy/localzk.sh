# localzk.sh: a standalone ZooKeeper on loopback for the by-hand fleets of
# deploy/heal-bench.sh and deploy/provenance-demo.sh (Debian's zookeeper
# package, Java; make deps). Sourced; the caller defines fail MESSAGE.
#
#   localzk_scratch NAME a scratch directory (sets tmp) and the list of the
#                        processes started (pids), all killed at exit and
#                        the directory removed (kept with KEEP=1, and said so)
#   localzk_init DIR     a data directory and zoo.cfg in DIR, on a free port
#                        (sets zkport)
#   localzk_start DIR    the server of DIR, started and serving (sets zkpid,
#                        adds it to pids); again after localzk_stop, on the
#                        same data
#   localzk_stop         SIGTERM, and wait for it

localzk_init() {
	zkport=$((21000 + RANDOM % 2000))
	! (exec 3<>"/dev/tcp/127.0.0.1/$zkport") 2>/dev/null || fail "port $zkport is taken; run again"
	mkdir -p "$1"
	cat >"$1/zoo.cfg" <<CFG
tickTime=200
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$1
clientPort=$zkport
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok
CFG
}

localzk_start() {
	java -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$1/zoo.cfg" >>"$1/zk.log" 2>&1 &
	zkpid=$!
	pids+=("$zkpid")
	# srvr answers "Mode: standalone" once it serves (a bare connect comes earlier).
	local deadline=$((SECONDS + 60))
	until (exec 3<>"/dev/tcp/127.0.0.1/$zkport" && echo srvr >&3 && grep -q Mode <&3) 2>/dev/null; do
		((SECONDS < deadline)) || fail "ZooKeeper did not start: $(tail -3 "$1/zk.log")"
		sleep 0.2
	done
}

localzk_stop() { kill "$zkpid" && wait "$zkpid" 2>/dev/null || true; }

localzk_scratch() {
	localzk_name=$1
	tmp=$(mktemp -d)
	pids=()
	trap localzk_cleanup EXIT
}

localzk_cleanup() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if [[ -n ${KEEP:-} ]]; then echo "$localzk_name: logs kept in $tmp" >&2; else rm -rf "$tmp"; fi
}
