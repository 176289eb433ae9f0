package worker

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// TestNextRange: NEXTRANGE n answers [first, n], and the IDs first ..
// first+n-1 are this caller's: one millisecond and one slot, never issued
// to anyone else (NEXTID and NEXTIDS around it come before and after), and
// counted like NEXTIDS n. Bad counts and format words are named, and the
// connection serves on; COMMAND INFO lists it; redis-cli, go-redis,
// redis-py and node-redis read it. Both transports.
func TestNextRange(t *testing.T) {
	zk := startZK(t)
	t.Run("loop", func(t *testing.T) { testNextRange(t, zk) })
	t.Run("goroutines", func(t *testing.T) {
		noEventLoop = true
		defer func() { noEventLoop = false }()
		testNextRange(t, zk)
	})
}

func testNextRange(t *testing.T, zk *zktest.Server) {
	w := startWorker(t, zk.Addr(), true, nil)
	r := w.dial(t)

	// readRange reads a [first, count] reply with an integer first.
	readRange := func(n int) int64 {
		t.Helper()
		r.expect("*2")
		first := mustID(t, r.expectPrefix(":")[1:])
		r.expect(":" + strconv.Itoa(n))
		checkRun(t, first, n)
		return first
	}

	r.send("NEXTID\r\n")
	prev := mustID(t, r.expectPrefix(":")[1:])
	r.send("NEXTRANGE 4096\r\n")
	first := readRange(snowflake.MaxBatch)
	if first <= prev {
		t.Fatalf("NEXTRANGE 4096 began at %d, after NEXTID %d", first, prev)
	}
	if f, _ := snowflake.Decode(first); f.Sequence != 0 {
		t.Fatalf("NEXTRANGE 4096 began at sequence %d: a whole millisecond starts at 0", f.Sequence)
	}
	prev = first + snowflake.MaxBatch - 1
	// Pipelined, lower case, interleaved with the other ID commands: every
	// ID after the last one of the request before.
	r.send("nextrange 10\r\nNEXTIDS 3\r\nNEXTRANGE 1\r\nNEXTID\r\n")
	first = readRange(10)
	if first <= prev {
		t.Fatalf("NEXTRANGE 10 began at %d, not after %d", first, prev)
	}
	prev = first + 9
	r.expect("*3")
	for range 3 {
		prev = mustIDAfter(t, r.expectPrefix(":")[1:], prev)
	}
	first = readRange(1)
	if first <= prev {
		t.Fatalf("NEXTRANGE 1 gave %d, not after %d", first, prev)
	}
	prev = mustIDAfter(t, r.expectPrefix(":")[1:], first)

	// STRING: first as a decimal bulk string, the count an integer.
	r.send("NEXTRANGE 5 STRING\r\n")
	r.expect("*2")
	hdr := r.expectPrefix("$")
	digits, _ := r.line()
	if n, _ := strconv.Atoi(hdr[1:]); n != len(digits) {
		t.Fatalf("NEXTRANGE 5 STRING: header %q for %q", hdr, digits)
	}
	first = mustIDAfter(t, digits, prev)
	checkRun(t, first, 5)
	r.expect(":5")
	prev = first + 4

	// SHORT: first as digits too (a range is for arithmetic), not the short form.
	r.send("NEXTRANGE 3 short\r\n")
	r.expect("*2")
	hdr = r.expectPrefix("$")
	digits, _ = r.line()
	if n, _ := strconv.Atoi(hdr[1:]); n != len(digits) || len(digits) == 13 {
		t.Fatalf("NEXTRANGE 3 SHORT: header %q for %q; want decimal digits", hdr, digits)
	}
	first = mustIDAfter(t, digits, prev)
	checkRun(t, first, 3)
	r.expect(":3")

	// Bad requests are named, and the connection serves on.
	for _, tc := range []struct{ req, want string }{
		{"NEXTRANGE 0", "-ERR count must be an integer in 1..4096, got '0'"},
		{"NEXTRANGE 4097", "-ERR count must be an integer in 1..4096, got '4097'"},
		{"NEXTRANGE -1", "-ERR count must be an integer in 1..4096, got '-1'"},
		{"NEXTRANGE many", "-ERR count must be an integer in 1..4096, got 'many'"},
		{"NEXTRANGE 5 BASE64", "-ERR ID format must be STRING, INTEGER or SHORT, got 'BASE64'"},
		{"NEXTRANGE 5 STRING STRING", "-ERR wrong number of arguments for 'nextrange' command"},
		{"NEXTRANGE", "-ERR wrong number of arguments for 'nextrange' command"},
	} {
		r.send(tc.req + "\r\n")
		r.expect(tc.want)
	}
	r.send("NEXTRANGE 2\r\n")
	readRange(2)

	// Counted as NEXTIDS n is: n IDs issued, one request by its own name.
	before := counter(w.srv.m.ids)
	r.send("NEXTRANGE 100\r\n")
	readRange(100)
	if got := counter(w.srv.m.ids) - before; got != 100 {
		t.Errorf("snowflake_worker_ids_issued_total went up by %v for NEXTRANGE 100", got)
	}
	k := w.srv.cmds.lookup([]byte("NEXTRANGE"))
	if ok, bad := counter(w.srv.m.requests[k][resOK]), counter(w.srv.m.requests[k][resError]); ok != 7 || bad != 7 {
		t.Errorf("requests_total{command=\"nextrange\"}: ok %v, error %v; want 7 and 7", ok, bad)
	}

	// go-redis: the reply, and COMMAND INFO's entry.
	c := w.client()
	ctx := context.Background()
	got, err := c.Do(ctx, "NEXTRANGE", 64).Int64Slice()
	if err != nil || len(got) != 2 || got[1] != 64 {
		t.Fatalf("go-redis NEXTRANGE 64 = %v, %v", got, err)
	}
	checkRun(t, got[0], 64)
	info, err := c.Do(ctx, "COMMAND", "INFO", "NEXTRANGE").Slice()
	if err != nil || len(info) != 1 {
		t.Fatalf("COMMAND INFO NEXTRANGE = %v, %v", info, err)
	}
	entry, _ := info[0].([]any)
	if len(entry) != 10 || entry[0] != "nextrange" || entry[1] != int64(-2) {
		t.Fatalf("COMMAND INFO NEXTRANGE = %v, want nextrange with arity -2", entry)
	}
	if flags, _ := entry[2].([]any); len(flags) != 1 || flags[0] != "write" {
		t.Fatalf("COMMAND INFO NEXTRANGE flags = %v, want [write]", entry[2])
	}

	// redis-cli shows the pair, one per line.
	_, port, _ := strings.Cut(w.addr, ":")
	out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", port, "NEXTRANGE", "3").CombinedOutput()
	lines := strings.Fields(string(out))
	if err != nil || len(lines) != 2 || lines[1] != "3" {
		t.Fatalf("redis-cli NEXTRANGE 3: %v\n%s", err, out)
	}
	checkRun(t, mustID(t, lines[0]), 3)

	// redis-py: a list of two ints, STRING a bytes string.
	py := `import sys, redis
r = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
a, n = r.execute_command("NEXTRANGE", 7)
s, m = r.execute_command("NEXTRANGE", 7, "STRING")
print(a, n, int(s), m)
`
	out, err = exec.Command("/usr/bin/python3", "-c", py, port).CombinedOutput()
	f := strings.Fields(string(out))
	if err != nil || len(f) != 4 || f[1] != "7" || f[3] != "7" || mustID(t, f[2]) <= mustID(t, f[0])+6 {
		t.Fatalf("redis-py NEXTRANGE 7: %v\n%s", err, out)
	}

	// node-redis, whose numbers hold 53 bits: the cookbook's STRING form,
	// counted up with BigInt, gives the exact IDs.
	js := `const { createClient } = require('redis');
(async () => {
  const client = createClient({ socket: { host: '127.0.0.1', port: Number(process.argv[1]) } });
  await client.connect();
  const [first, n] = await client.sendCommand(['NEXTRANGE', '4096', 'STRING']);
  const ids = Array.from({ length: n }, (_, i) => (BigInt(first) + BigInt(i)).toString());
  console.log(typeof first, n, ids[0], ids[n - 1]);
  await client.quit();
})();`
	node := exec.Command("node", "-e", js, port)
	node.Env = append(os.Environ(), "NODE_PATH=/usr/share/nodejs")
	out, err = node.CombinedOutput()
	f = strings.Fields(string(out))
	if err != nil || len(f) != 4 || f[0] != "string" || f[1] != "4096" || mustID(t, f[3]) != mustID(t, f[2])+4095 {
		t.Fatalf("node-redis NEXTRANGE 4096 STRING: %v\n%s", err, out)
	}
	checkRun(t, mustID(t, f[2]), 4096)
}

// checkRun fails unless first .. first+n-1 are n IDs of one millisecond
// and one slot: the sequence does not run past 4095 into the next field.
func checkRun(t *testing.T, first int64, n int) {
	t.Helper()
	a, errA := snowflake.Decode(first)
	b, errB := snowflake.Decode(first + int64(n) - 1)
	if errA != nil || errB != nil || a.UnixMs != b.UnixMs || a.Slot() != b.Slot() || b.Sequence != a.Sequence+n-1 {
		t.Fatalf("range %d+%d is not one millisecond of one slot: %+v .. %+v", first, n, a, b)
	}
}

// TestNextRangeRefused: without a lease NEXTRANGE is refused as NEXTIDS is,
// -NOLEASE and the connection closed (CloseOnNoLease), no IDs.
func TestNextRangeRefused(t *testing.T) {
	w := startWorker(t, "127.0.0.1:1", false, nil) // no ZooKeeper: no lease
	r := w.dial(t)
	r.send("PING\r\nNEXTRANGE 4096\r\nPING\r\n")
	r.expect("+PONG")
	r.expectPrefix("-NOLEASE this worker holds no lease")
	r.expectClosed()
	k := w.srv.cmds.lookup([]byte("nextrange"))
	if n := counter(w.srv.m.requests[k][resNoLease]); n != 1 {
		t.Errorf("requests_total{command=\"nextrange\",result=\"nolease\"} = %v, want 1", n)
	}
}

// counter reads a counter.
func counter(c prometheus.Counter) float64 {
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		panic(err)
	}
	return d.Counter.GetValue()
}
