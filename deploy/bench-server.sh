#!/usr/bin/env bash
# bench-server.sh: Redis 7 and snowflaked side by side on this machine, under
# the same redis-benchmark invocations, runs alternating between the two.
#
#   deploy/bench-server.sh            # or: make bench-server
#
# It starts a ZooKeeper (Debian's jars in /usr/share/java), a redis-server
# (--save '' --appendonly no) and a freshly built snowflaked, each on a free
# loopback port, then prints a markdown table of medians over ROUNDS rounds.
# With taskset and 2+ CPUs, each server is pinned to CPU 1 and redis-benchmark
# to CPU 0, so both servers get the same single core and the client never
# competes with them.
#
# The TLS rows: both servers also listen with TLS (redis-server --tls-port,
# snowflaked --tls-listen) with the same ECDSA P-256 certificate, made here
# by openssl, no client certificates; redis-benchmark --tls against each.
#
# Knobs (environment): ROUNDS=5, N=200000 (no pipeline), NP=2000000 (pipeline
# 16), NB=4000 (NEXTIDS 4096 and NEXTRANGE 4096 requests), IDLE=1000 (idle
# connections), PIN=0 (no pinning: servers and client share both cores as
# the scheduler likes), TLS=0 (no TLS rows), BATCH_ONLY=1 (only the NEXTIDS
# 4096 and NEXTRANGE 4096 rows, and the RSS).
set -euo pipefail

ROUNDS=${ROUNDS:-5}
N=${N:-200000}
NP=${NP:-2000000}
NB=${NB:-4000}
IDLE=${IDLE:-1000}

cd "$(dirname "$0")/.."
TLS=${TLS:-1}
for tool in redis-server redis-benchmark redis-cli java go curl openssl; do
	command -v "$tool" >/dev/null || { echo "bench-server: $tool is needed" >&2; exit 1; }
done
[ -f /usr/share/java/zookeeper.jar ] || { echo "bench-server: apt-get install zookeeper" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# freeport prints a loopback port nothing listens on, below Linux's ephemeral
# range (32768-60999) as zktest.FreePort picks, so no outgoing connection
# takes it before the server binds it.
freeport() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
}

SRV=() CLI=()
if [ "${PIN:-1}" != 0 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
	SRV=(taskset -c 1) CLI=(taskset -c 0)
fi

# ZooKeeper, standalone, as integration/zktest runs it.
zkport=$(freeport)
mkdir -p "$work/zk"
cat >"$work/zoo.cfg" <<EOF
tickTime=200
minSessionTimeout=400
maxSessionTimeout=60000
dataDir=$work/zk
clientPort=$zkport
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok
forceSync=no
EOF
java -Xmx256m -XX:+UseSerialGC -Dzookeeper.admin.enableServer=false \
	-cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
	org.apache.zookeeper.server.quorum.QuorumPeerMain "$work/zoo.cfg" >"$work/zk.log" 2>&1 &
pids+=($!)
# timeout: a server still starting can accept and not answer.
zk_up() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$zkport && printf srvr >&3 && grep -q Mode: <&3" 2>/dev/null; }
for _ in $(seq 200); do
	zk_up && break
	sleep 0.05
done
zk_up || { echo "bench-server: ZooKeeper not serving on :$zkport" >&2; cat "$work/zk.log" >&2; exit 1; }

# The TLS certificate both servers present: a CA and a server certificate
# for 127.0.0.1.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$work/ca.key" -out "$work/ca.pem" -days 2 -subj /CN=bench-ca 2>/dev/null
openssl req "${ec[@]}" -keyout "$work/tls.key" -out "$work/tls.csr" -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >"$work/san.ext"
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.pem" -CAkey "$work/ca.key" -CAcreateserial \
	-out "$work/tls.pem" -days 2 -extfile "$work/san.ext" 2>/dev/null
rtport=$(freeport)
stport=$(freeport)
RTLS=() STLS=()
if [ "$TLS" != 0 ]; then
	RTLS=(--tls-port "$rtport" --tls-cert-file "$work/tls.pem" --tls-key-file "$work/tls.key" --tls-auth-clients no)
	STLS=(--tls-listen "127.0.0.1:$stport" --tls-cert-file "$work/tls.pem" --tls-key-file "$work/tls.key" --tls-auth-clients no)
fi

# Redis 7.
rport=$(freeport)
"${SRV[@]}" redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no \
	--maxclients 10000 --daemonize no --logfile "$work/redis.log" "${RTLS[@]}" &
rpid=$!
pids+=($rpid)

# snowflaked, under a root made for it (a worker makes none itself): a new
# ensemble, so no earlier fleet's IDs to wait out; a throwaway one on
# loopback, so no ZooKeeper credentials (--zk-insecure: without them and
# without it, init and the worker refuse to start).
go build -o "$work/" ./cmd/snowflaked ./cmd/snowflakectl
"$work/snowflakectl" init --zk "127.0.0.1:$zkport" --new-fleet --zk-insecure >"$work/init.log" 2>&1 ||
	{ echo "bench-server: snowflakectl init failed" >&2; cat "$work/init.log" >&2; exit 1; }
sport=$(freeport)
hport=$(freeport)
"${SRV[@]}" "$work/snowflaked" --zk "127.0.0.1:$zkport" --zk-insecure --listen "127.0.0.1:$sport" \
	--http "127.0.0.1:$hport" --log-level warn "${STLS[@]}" 2>"$work/snowflaked.log" &
spid=$!
pids+=($spid)

sf_ready() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/readyz")" = 200 ]; }
redis_ready() { redis-cli -p "$rport" PING >/dev/null 2>&1; }
for _ in $(seq 300); do
	sf_ready && redis_ready && break
	sleep 0.05
done
sf_ready || { echo "bench-server: snowflaked not ready" >&2; cat "$work/snowflaked.log" >&2; exit 1; }
redis_ready || { echo "bench-server: redis-server not answering" >&2; cat "$work/redis.log" >&2; exit 1; }

# cputicks PID: the process's user+system CPU so far, in clock ticks.
cputicks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

# bench PORT PID REQUESTS ARGS... prints "rps p50 p99 cpu" from
# redis-benchmark's CSV line, cpu being the server's CPU microseconds per
# request: the one figure here the client cannot limit.
bench() {
	local port=$1 pid=$2 n=$3 t0 t1 line
	shift 3
	[ "$port" = "$rtport" ] || [ "$port" = "$stport" ] && set -- --tls --cacert "$work/ca.pem" "$@"
	t0=$(cputicks "$pid")
	line=$("${CLI[@]}" redis-benchmark -h 127.0.0.1 -p "$port" --csv -n "$n" "$@" 2>/dev/null |
		awk -F, 'NR==2 { gsub(/"/, ""); print $2, $5, $7 }')
	t1=$(cputicks "$pid")
	echo "$line $(awk -v d=$((t1 - t0)) -v n="$n" -v hz="$HZ" 'BEGIN { printf "%.2f", d * 1e6 / hz / n }')"
}

median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }

echo "bench-server: ZooKeeper :$zkport, redis-server :$rport (pid $rpid), snowflaked :$sport (pid $spid)," \
	"${ROUNDS} rounds${SRV:+, servers pinned to CPU 1, client to CPU 0}" >&2
: >"$work/results"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq "$ROUNDS"); do
	# Alternate which server goes first, so neither always gets a warm or
	# cold machine.
	if [ $((round % 2)) = 1 ]; then order="redis snowflaked"; else order="snowflaked redis"; fi
	# Each test runs on both servers back to back, so that load from
	# elsewhere on the machine hits both alike.
	tests="plain p16"
	[ "$TLS" != 0 ] && tests="$tests tls tlsp16"
	[ "${BATCH_ONLY:-0}" != 0 ] && tests=""
	for test in $tests; do
		for who in $order; do
			if [ "$who" = redis ]; then port=$rport pid=$rpid cmd=(INCR counter); else port=$sport pid=$spid cmd=(NEXTID); fi
			case $test in tls*) if [ "$who" = redis ]; then port=$rtport; else port=$stport; fi ;; esac
			case $test in
			plain | tls) echo "$who $test $(bench "$port" "$pid" "$N" -c 50 "${cmd[@]}")" >>"$work/results" ;;
			p16 | tlsp16) echo "$who $test $(bench "$port" "$pid" "$NP" -c 50 -P 16 "${cmd[@]}")" >>"$work/results" ;;
			esac
		done
	done
	echo "snowflaked batch $(bench "$sport" "$spid" "$NB" -c 1 NEXTIDS 4096)" >>"$work/results"
	echo "snowflaked batchp4 $(bench "$sport" "$spid" "$NB" -c 1 -P 4 NEXTIDS 4096)" >>"$work/results"
	echo "snowflaked range $(bench "$sport" "$spid" "$NB" -c 1 NEXTRANGE 4096)" >>"$work/results"
	echo "snowflaked rangep4 $(bench "$sport" "$spid" "$NB" -c 1 -P 4 NEXTRANGE 4096)" >>"$work/results"
	echo "bench-server: round $round done" >&2
done

# rss PID PORT: VmRSS in MiB with IDLE idle connections open, and before.
rss_mib() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
idle_rss() {
	local pid=$1 port=$2 count=$3
	"${CLI[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -c "$IDLE" -I >/dev/null 2>&1 &
	local bpid=$!
	for _ in $(seq 200); do
		[ "$($count)" -ge "$IDLE" ] 2>/dev/null && break
		sleep 0.05
	done
	sleep 0.5
	local open
	open=$($count)
	echo "$(rss_mib "$pid") $open"
	kill "$bpid" 2>/dev/null || true
	wait "$bpid" 2>/dev/null || true
}
redis_conns() { redis-cli -p "$rport" INFO clients | awk -F: '/^connected_clients/ { print $2 - 1 }' | tr -d '\r'; }
sf_conns() { redis-cli -p "$sport" INFO | awk -F: '/^connections:/ { print $2 - 1 }' | tr -d '\r'; }
redis_base=$(rss_mib "$rpid")
sf_base=$(rss_mib "$spid")
read -r redis_idle redis_open < <(idle_rss "$rpid" "$rport" redis_conns)
read -r sf_idle sf_open < <(idle_rss "$spid" "$sport" sf_conns)

col() { awk -v w="$1" -v m="$2" -v c="$3" '$1 == w && $2 == m { print $c }' "$work/results" | median; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
r1=$(col redis plain 3) s1=$(col snowflaked plain 3)
r1p50=$(col redis plain 4) s1p50=$(col snowflaked plain 4)
r1p99=$(col redis plain 5) s1p99=$(col snowflaked plain 5)
r1cpu=$(col redis plain 6) s1cpu=$(col snowflaked plain 6)
r16=$(col redis p16 3) s16=$(col snowflaked p16 3)
r16cpu=$(col redis p16 6) s16cpu=$(col snowflaked p16 6)
r16p99=$(col redis p16 5) s16p99=$(col snowflaked p16 5)
rt=$(col redis tls 3) st=$(col snowflaked tls 3)
rtp99=$(col redis tls 5) stp99=$(col snowflaked tls 5)
rtcpu=$(col redis tls 6) stcpu=$(col snowflaked tls 6)
rt16=$(col redis tlsp16 3) st16=$(col snowflaked tlsp16 3)
rt16cpu=$(col redis tlsp16 6) st16cpu=$(col snowflaked tlsp16 6)
batch=$(col snowflaked batch 3)
ids=$(awk -v r="$batch" 'BEGIN { printf "%.0f", r * 4096 }')
batchp4=$(col snowflaked batchp4 3)
idsp4=$(awk -v r="$batchp4" 'BEGIN { printf "%.0f", r * 4096 }')
range=$(col snowflaked range 3)
rids=$(awk -v r="$range" 'BEGIN { printf "%.0f", r * 4096 }')
rangep4=$(col snowflaked rangep4 3)
ridsp4=$(awk -v r="$rangep4" 'BEGIN { printf "%.0f", r * 4096 }')
# permid US_PER_REQUEST: the worker's CPU per million IDs, in ms, for
# requests of 4,096 IDs.
permid() { awk -v c="$1" 'BEGIN { printf "%.1f", c * 1e6 / 4096 / 1000 }'; }
bcpu=$(permid "$(col snowflaked batch 6)") bcpup4=$(permid "$(col snowflaked batchp4 6)")
rcpu=$(permid "$(col snowflaked range 6)") rcpup4=$(permid "$(col snowflaked rangep4 6)")

cat <<EOF

Load average before/after: $load0 / $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs (other work on the machine skews both columns alike, not the ratios much).

| test (redis-benchmark, medians of $ROUNDS rounds) | Redis 7 \`INCR counter\` | snowflaked \`NEXTID\` | snowflaked / Redis | target |
|---|---:|---:|---:|---|
| 50 conns, no pipeline: requests/s (\`-c 50 -n $N\`) | $r1 | $s1 | $(ratio "$s1" "$r1") | >= 1.0 |
| 50 conns, no pipeline: p50 latency ms | $r1p50 | $s1p50 | $(ratio "$s1p50" "$r1p50") | |
| 50 conns, no pipeline: p99 latency ms | $r1p99 | $s1p99 | $(ratio "$s1p99" "$r1p99") | <= 1.0 |
| 50 conns, no pipeline: server CPU per request, us | $r1cpu | $s1cpu | $(ratio "$s1cpu" "$r1cpu") | |
| 50 conns, pipeline 16: requests/s (\`-c 50 -n $NP -P 16\`) | $r16 | $s16 | $(ratio "$s16" "$r16") | >= 1.0 |
| 50 conns, pipeline 16: p99 latency ms | $r16p99 | $s16p99 | $(ratio "$s16p99" "$r16p99") | |
| 50 conns, pipeline 16: server CPU per request, us | $r16cpu | $s16cpu | $(ratio "$s16cpu" "$r16cpu") | |
| TLS, 50 conns, no pipeline: requests/s (\`--tls -c 50 -n $N\`) | $rt | $st | $(ratio "$st" "$rt") | >= 1.0 |
| TLS, 50 conns, no pipeline: p99 latency ms | $rtp99 | $stp99 | $(ratio "$stp99" "$rtp99") | |
| TLS, 50 conns, no pipeline: server CPU per request, us | $rtcpu | $stcpu | $(ratio "$stcpu" "$rtcpu") | |
| TLS, 50 conns, pipeline 16: requests/s (\`--tls -c 50 -n $NP -P 16\`) | $rt16 | $st16 | $(ratio "$st16" "$rt16") | >= 1.0 |
| TLS, 50 conns, pipeline 16: server CPU per request, us | $rt16cpu | $st16cpu | $(ratio "$st16cpu" "$rt16cpu") | |
| \`NEXTIDS 4096\`, 1 conn (\`-c 1 -n $NB\`): IDs/s | - | $ids ($batch req/s) | $(ratio "$ids" 4096000) of the 4,096,000/s cap | >= 3,500,000 |
| \`NEXTIDS 4096\`, 1 conn, pipeline 4 (\`-c 1 -n $NB -P 4\`): IDs/s | - | $idsp4 ($batchp4 req/s) | $(ratio "$idsp4" 4096000) of the cap | |
| \`NEXTRANGE 4096\`, 1 conn (\`-c 1 -n $NB\`): IDs/s | - | $rids ($range req/s) | $(ratio "$rids" 4096000) of the cap | |
| \`NEXTRANGE 4096\`, 1 conn, pipeline 4 (\`-c 1 -n $NB -P 4\`): IDs/s | - | $ridsp4 ($rangep4 req/s) | $(ratio "$ridsp4" 4096000) of the cap | >= 0.99 of the cap |
| worker CPU per million IDs, ms: \`NEXTIDS 4096\` / \`NEXTRANGE 4096\`, 1 conn | - | $bcpu / $rcpu | $(ratio "$rcpu" "$bcpu") | |
| worker CPU per million IDs, ms: \`NEXTIDS 4096\` / \`NEXTRANGE 4096\`, 1 conn, pipeline 4 | - | $bcpup4 / $rcpup4 | $(ratio "$rcpup4" "$bcpup4") | |
| RSS, idle server, MiB | $redis_base | $sf_base | | |
| RSS with $IDLE idle connections (\`-c $IDLE -I\`), MiB | $redis_idle ($redis_open open) | $sf_idle ($sf_open open) | | <= 50 |
EOF
