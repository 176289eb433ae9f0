package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/testenv"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// TestLive runs the server on a fakeLease: RESP framing, limits and drains,
// where the lease is not under test; every subtest has a worker of its own.
// It runs twice: with the epoll loop (where there is one) and with a
// goroutine per connection.
func TestLive(t *testing.T) {
	bothServeModes(t, func(t *testing.T) {
		t.Run("id-format", testIDFormat)
		t.Run("redis-cli", testRedisCLI)
		t.Run("abuse", testAbuse)
		t.Run("max-conns", testMaxConns)
		t.Run("drain", testDrain)
		t.Run("drain-timeout", testDrainTimeout)
		t.Run("zero-alloc", testZeroAlloc)
		t.Run("slow-reader", testSlowReader)
		t.Run("hello-setname", testHelloSetName)
		t.Run("drain-kernel-buffered", testDrainKernelBuffered)
		t.Run("read-timeout-lingers", testReadTimeoutLingers)
		t.Run("write-timeout-from-stall", testWriteTimeoutFromStall)
	})
}

// TestLiveZooKeeper runs the server end to end on a coordinator against one
// real ZooKeeper, each subtest under its own root: what the lease decides
// (the slot, the ceiling, a cut, clock steps) reaching the wire, /status
// and /metrics.
func TestLiveZooKeeper(t *testing.T) {
	zk := startZK(t)
	bothServeModes(t, func(t *testing.T) {
		t.Run("go-redis", func(t *testing.T) { testGoRedis(t, zk) })
		t.Run("admin", func(t *testing.T) { testAdmin(t, zk) })
		t.Run("lease-lost", func(t *testing.T) { testLeaseLost(t, zk) })
		t.Run("clock-back", func(t *testing.T) { testClockBack(t, zk) })
		t.Run("clock-back-logical", func(t *testing.T) { testClockBackLogical(t, zk) })
		t.Run("ready-per-slice", func(t *testing.T) { testReadyPerSlice(t, zk) })
	})
}

// bothServeModes runs f with the epoll loop (where there is one), then with
// a goroutine per connection.
func bothServeModes(t *testing.T, f func(t *testing.T)) {
	t.Run("loop", f)
	t.Run("goroutines", func(t *testing.T) {
		noEventLoop = true
		defer func() { noEventLoop = false }()
		f(t)
	})
}

func testGoRedis(t *testing.T, zk *zktest.Server) {
	w := startWorker(t, zk.Addr(), true, nil)
	w.srv.mu.Lock()
	looped := len(w.srv.loops) > 0
	w.srv.mu.Unlock()
	if want := runtime.GOOS == "linux" && !noEventLoop; looped != want {
		t.Fatalf("epoll loop running: %v, want %v", looped, want)
	}
	ctx := context.Background()
	c := w.client(func(o *redis.Options) { o.ClientName = "tester" })
	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if got, err := c.Do(ctx, "PING", "hi").Text(); err != nil || got != "hi" {
		t.Fatalf("PING hi = %q, %v", got, err)
	}
	slot := w.coord.Status().Slot
	id, err := c.Do(ctx, "NEXTID").Int64()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := snowflake.Decode(id)
	if f.Slot().String() != slot {
		t.Fatalf("id %d is of slot %v, worker holds %s", id, f.Slot(), slot)
	}
	ids, err := c.Do(ctx, "nextids", "4096").Int64Slice()
	if err != nil || len(ids) != 4096 {
		t.Fatalf("NEXTIDS 4096: %d ids, %v", len(ids), err)
	}
	for i := range ids {
		if ids[i] != ids[0]+int64(i) || ids[0] <= id {
			t.Fatalf("ids not contiguous after %d: %d, %d", id, ids[0], ids[i])
		}
	}
	dec, err := c.Do(ctx, "DECODE", strconv.FormatInt(id, 10)).Slice()
	if err != nil || len(dec) != 10 {
		t.Fatalf("DECODE = %v, %v", dec, err)
	}
	m := map[string]any{}
	for i := 0; i < len(dec); i += 2 {
		m[dec[i].(string)] = dec[i+1]
	}
	if m["unix_ms"] != f.UnixMs || m["datacenter"] != int64(f.Datacenter) || m["machine"] != int64(f.Machine) ||
		m["sequence"] != int64(f.Sequence) || m["time"] != f.Time().Format(time.RFC3339Nano) {
		t.Fatalf("DECODE %d = %v, want %+v", id, m, f)
	}
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"NEXTIDS", "0"}, "ERR count must be an integer in 1..4096, got '0'"},
		{[]any{"NEXTIDS", "-3"}, "ERR count must be an integer in 1..4096, got '-3'"},
		{[]any{"NEXTIDS", "4097"}, "ERR count must be an integer in 1..4096, got '4097'"},
		{[]any{"NEXTIDS", "ten"}, "ERR count must be an integer in 1..4096, got 'ten'"},
		{[]any{"NEXTIDS"}, "ERR wrong number of arguments for 'nextids' command"},
		{[]any{"NEXTID", "1"}, "ERR ID format must be STRING, INTEGER or SHORT, got '1'"},
		{[]any{"NEXTID", "STRING", "x"}, "ERR wrong number of arguments for 'nextid' command"},
		{[]any{"NEXTIDS", "3", "BIGINT"}, "ERR ID format must be STRING, INTEGER or SHORT, got 'BIGINT'"},
		{[]any{"NEXTIDS", "3", "STRING", "x"}, "ERR wrong number of arguments for 'nextids' command"},
		{[]any{"IDFORMAT", "HEX"}, "ERR ID format must be STRING, INTEGER or SHORT, got 'HEX'"},
		{[]any{"IDFORMAT", "STRING", "x"}, "ERR wrong number of arguments for 'idformat' command"},
		{[]any{"DECODE", "x\r\ny"}, `ERR id must be a non-negative 64-bit integer, got 'x\x0d\x0ay'`},
		{[]any{"DECODE", "-1"}, "ERR id must be a non-negative 64-bit integer, got '-1'"},
		{[]any{"FOO", "bar"}, "ERR unknown command 'FOO'"},
		{[]any{"SELECT", "1"}, "ERR DB index is out of range (this server has only database 0)"},
		{[]any{"HELLO", "3"}, "NOPROTO sorry, this protocol version is not supported: snowflaked speaks RESP2 only"},
	} {
		err := c.Do(ctx, tc.args...).Err()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.want)
		}
	}
	info, err := c.Info(ctx).Result()
	if err != nil || !strings.Contains(info, "# Snowflake\r\n") || !strings.Contains(info, "slot:"+slot+"\r\n") ||
		!strings.Contains(info, "state:serving\r\n") || !strings.Contains(info, "ready:1\r\n") {
		t.Fatalf("INFO = %q, %v", info, err)
	}
	if name, err := c.ClientGetName(ctx).Result(); err != nil || name != "tester" {
		t.Fatalf("CLIENT GETNAME = %q, %v", name, err)
	}
	if err := c.Do(ctx, "SELECT", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Do(ctx, "COMMAND", "COUNT").Int(); err != nil || n != len(w.srv.cmds)-1 {
		t.Fatalf("COMMAND COUNT = %d, %v", n, err)
	}
	if cmds, err := c.Command(ctx).Result(); err != nil || cmds["nextids"] == nil || cmds["nextids"].Arity != -2 {
		t.Fatalf("COMMAND = %v, %v", cmds, err)
	}

	// Pipelined and concurrent: every ID unique.
	seen := map[int64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 50; r++ {
				cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for i := 0; i < 16; i++ {
						p.Do(ctx, "NEXTID")
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				for _, cmd := range cmds {
					id, _ := cmd.(*redis.Cmd).Int64()
					if seen[id] {
						errs <- fmt.Errorf("id %d twice", id)
					}
					seen[id] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(seen) != 8*50*16 {
		t.Fatalf("%d unique ids, want %d", len(seen), 8*50*16)
	}
}

func testRedisCLI(t *testing.T) {
	testenv.Require(t, "redis-cli")
	cli := "redis-cli"
	w := startFake(t, nil)
	_, port, _ := strings.Cut(w.addr, ":")
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command(cli, append([]string{"-h", "127.0.0.1", "-p", port}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := strings.TrimSpace(run("", "NEXTID"))
	id, err := strconv.ParseInt(out, 10, 64)
	if err != nil || id <= 0 {
		t.Fatalf("redis-cli NEXTID = %q", out)
	}
	lines := strings.Fields(run("", "NEXTIDS", "3"))
	if len(lines) != 3 {
		t.Fatalf("redis-cli NEXTIDS 3 = %q", lines)
	}
	first := mustInt(lines[0])
	for i, l := range lines {
		if mustInt(l) != first+int64(i) || first <= id {
			t.Fatalf("NEXTIDS 3 after %d = %q", id, lines)
		}
	}
	if out := run("", "DECODE", "1724551110457221119"); out != "unix_ms\n1700000000000\ntime\n2023-11-14T22:13:20Z\ndatacenter\n7\nmachine\n13\nsequence\n4095\n" {
		t.Fatalf("DECODE = %q", out)
	}
	if out := run("", "PING"); out != "PONG\n" {
		t.Fatalf("PING = %q", out)
	}
	if out := run("", "NEXTIDS", "0"); !strings.Contains(out, "ERR count must be an integer in 1..4096, got '0'") {
		t.Fatalf("NEXTIDS 0 = %q", out)
	}
	if out := run("", "INFO"); !strings.Contains(out, "# Snowflake") || !strings.Contains(out, "state:serving") {
		t.Fatalf("INFO = %q", out)
	}
	// Commands on stdin, as a script would pipe them.
	if out := strings.Fields(run("NEXTID\nPING\n")); len(out) != 2 || out[1] != "PONG" {
		t.Fatalf("stdin = %q", out)
	}
	if bench, err := exec.LookPath("redis-benchmark"); err == nil {
		out, err := exec.Command(bench, "-h", "127.0.0.1", "-p", port, "-c", "4", "-n", "2000", "-q", "NEXTID").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "requests per second") || strings.Contains(string(out), "ERR") {
			t.Fatalf("redis-benchmark: %v\n%s", err, out)
		}
	}
}

func mustInt(s string) int64 { v, _ := strconv.ParseInt(s, 10, 64); return v }

func testAdmin(t *testing.T, zk *zktest.Server) {
	w := startWorker(t, zk.Addr(), true, func(c *Config) { c.Listen, c.Advertise = "127.0.0.1:0", "worker-1:7609" })
	c := w.client()
	if err := c.Do(context.Background(), "NEXTIDS", "10").Err(); err != nil {
		t.Fatal(err)
	}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(w.admin.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Fatalf("/readyz = %d %q", code, body)
	}
	code, body := get("/status")
	var st Status
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("/status = %d %q: %v", code, body, err)
	}
	if st.Slot != w.coord.Status().Slot || st.State != "serving" || !st.Ready || st.Version != "test" ||
		st.Advertise != "worker-1:7609" || st.Connections < 1 || st.Issued < 10 || st.CeilingMs == 0 {
		t.Fatalf("/status = %+v", st)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		"snowflake_worker_ids_issued_total 10",
		`snowflake_worker_requests_total{command="nextids",result="ok"} 1`,
		`snowflake_worker_request_duration_seconds_bucket{command="nextids",le=`,
		"snowflake_worker_connections 1",
		"snowflake_worker_connections_total 1",
		"snowflake_worker_connections_rejected_total 0",
		`snowflake_coordinator_lease_state{state="serving"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(metrics)
	}
}

// testAbuse throws malformed and hostile input at a live server while a
// well-behaved client keeps taking IDs; that client sees no error and no
// duplicate, and every abuser gets a clear error or a clean close.
func testAbuse(t *testing.T) {
	w := startFake(t, func(c *Config) {
		c.ReadTimeout, c.IdleTimeout, c.MaxConns = 300*time.Millisecond, 2*time.Second, 200
	})
	ctx, cancel := context.WithCancel(context.Background())
	good := w.client()
	slot := w.lease.Status().Slot
	var wg sync.WaitGroup
	var goodErr error
	var goodN int
	wg.Add(1)
	go func() {
		defer wg.Done()
		seen := map[int64]bool{}
		last := int64(0)
		for ctx.Err() == nil {
			ids, err := good.Do(context.Background(), "NEXTIDS", "7").Int64Slice()
			if err == nil && len(ids) != 7 {
				err = fmt.Errorf("got %d ids", len(ids))
			}
			if err != nil {
				goodErr = err
				return
			}
			for _, id := range ids {
				if seen[id] || id <= last {
					goodErr = fmt.Errorf("id %d repeated or not ascending after %d", id, last)
					return
				}
				if f, err := snowflake.Decode(id); err != nil || f.Slot().String() != slot ||
					time.Since(f.Time()) > time.Minute || time.Until(f.Time()) > time.Minute {
					goodErr = fmt.Errorf("id %d is not a valid id of slot %s now: %+v, %v", id, slot, f, err)
					return
				}
				seen[id], last = true, id
			}
			goodN++
		}
	}()

	type abuse struct {
		name, send string
		want       []string // reply lines expected, in order, as prefixes
		closed     bool     // the server must close after them
	}
	for _, a := range []abuse{
		{"inline", "NEXTID\r\nPING\r\n", []string{":", "+PONG"}, false},
		{"inline lf only", "nextids 2\n", []string{"*2", ":", ":"}, false},
		{"wrong arity", "*1\r\n$7\r\nNEXTIDS\r\n", []string{"-ERR wrong number of arguments for 'nextids' command"}, false},
		{"count zero", "NEXTIDS 0\r\n", []string{"-ERR count must be an integer in 1..4096, got '0'"}, false},
		{"count negative", "NEXTIDS -1\r\n", []string{"-ERR count must be an integer in 1..4096, got '-1'"}, false},
		{"count garbage", "NEXTIDS 1e3\r\n", []string{"-ERR count must be an integer in 1..4096, got '1e3'"}, false},
		{"count too big", "NEXTIDS 4097\r\n", []string{"-ERR count must be an integer in 1..4096, got '4097'"}, false},
		{"count huge", "NEXTIDS 99999999999999999999999\r\n", []string{"-ERR count must be an integer in 1..4096, got '99999999999999999999999'"}, false},
		{"unknown", "FLUSHALL\r\n", []string{"-ERR unknown command 'FLUSHALL'"}, false},
		{"unknown binary", "*1\r\n$3\r\n\x00\r\n\r\n", []string{`-ERR unknown command '\x00\x0d\x0a'`}, false},
		{"decode garbage", "DECODE banana\r\n", []string{"-ERR id must be a non-negative 64-bit integer, got 'banana'"}, false},
		{"decode overflow", "DECODE 9223372036854775808\r\n", []string{"-ERR id must be a non-negative 64-bit integer, got '9223372036854775808'"}, false},
		{"empty lines", "\r\n\r\n*0\r\nPING\r\n", []string{"+PONG"}, false},
		{"huge bulk", "*1\r\n$2147483648\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"bulk past limit", "*1\r\n$65537\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"bulk past limit, body sent", "*1\r\n$100000\r\n" + strings.Repeat("x", 100000) + "\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"huge array", "*2000000000\r\n", []string{"-ERR Protocol error: invalid multibulk length"}, true},
		{"negative bulk", "*1\r\n$-5\r\n", []string{"-ERR Protocol error: invalid bulk length"}, true},
		{"not a bulk", "*1\r\n+PING\r\n", []string{"-ERR Protocol error: expected '$'"}, true},
		{"bad crlf", "*1\r\n$4\r\nPINGPONG\r\n", []string{"-ERR Protocol error: expected CRLF"}, true},
		{"unbalanced quotes", "PING \"oops\r\n", []string{"-ERR Protocol error: unbalanced quotes in request"}, true},
		{"endless header", "*" + strings.Repeat("9", 100), []string{"-ERR Protocol error: too big mbulk count string"}, true},
		{"endless inline", strings.Repeat("A", MaxInline+10), []string{"-ERR Protocol error: too big inline request"}, true},
		{"half-written", "*2\r\n$7\r\nNEXTIDS\r\n$2\r\n1", []string{"-ERR Protocol error: request not completed within 300ms"}, true},
		{"reply then bad", "PING\r\n*1\r\n$x\r\n", []string{"+PONG", "-ERR Protocol error: invalid bulk length"}, true},
		{"quit", "QUIT\r\nPING\r\n", []string{"+OK"}, true},
	} {
		t.Run(a.name, func(t *testing.T) {
			r := w.dial(t)
			r.send(a.send)
			for _, want := range a.want {
				r.expectPrefix(want)
			}
			if a.closed {
				r.expectClosed()
			} else {
				r.send("PING\r\n")
				r.expect("+PONG")
			}
		})
	}
	t.Run("idle", func(t *testing.T) {
		r := w.dial(t)
		r.send("PING\r\n")
		r.expect("+PONG")
		start := time.Now()
		r.expectClosed()
		if d := time.Since(start); d < time.Second {
			t.Fatalf("idle connection closed after %v, before the 2s idle timeout", d)
		}
	})
	t.Run("slowloris", func(t *testing.T) {
		// Trickled bytes do not extend the read timeout of a request.
		r := w.dial(t)
		got := make(chan string, 1)
		go func() { l, _ := r.line(); got <- l }()
		frame := "*2\r\n$7\r\nNEXTIDS\r\n$1\r\n5\r\n"
		var reply string
	trickle:
		for i := 0; i < len(frame)-1; i++ {
			if _, err := r.nc.Write([]byte(frame[i : i+1])); err != nil {
				break
			}
			select {
			case reply = <-got:
				break trickle
			case <-time.After(100 * time.Millisecond):
			}
		}
		if reply == "" {
			reply = <-got
		}
		if !strings.HasPrefix(reply, "-ERR Protocol error: request not completed") {
			t.Fatalf("trickled request: reply %q", reply)
		}
	})
	t.Run("many at once", func(t *testing.T) {
		var wg sync.WaitGroup
		for i := 0; i < 50; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := w.dial(t)
				r.send("*1\r\n$999999\r\n")
				r.expectPrefix("-ERR Protocol error")
				r.expectClosed()
			}()
		}
		wg.Wait()
	})
	time.Sleep(100 * time.Millisecond)
	cancel()
	wg.Wait()
	if goodErr != nil {
		t.Fatalf("well-behaved client: %v", goodErr)
	}
	if goodN == 0 {
		t.Fatal("well-behaved client got no IDs")
	}
	t.Logf("well-behaved client made %d NEXTIDS requests during the abuse", goodN)
}

func testMaxConns(t *testing.T) {
	w := startFake(t, func(c *Config) { c.MaxConns = 3 })
	var held []*raw
	for i := 0; i < 3; i++ {
		r := w.dial(t)
		r.send("PING\r\n")
		r.expect("+PONG")
		held = append(held, r)
	}
	r := w.dial(t)
	r.expect("-ERR max number of clients reached")
	r.expectClosed()
	held[0].nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for w.srv.open.Load() > 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r = w.dial(t)
	r.send("NEXTID\r\n")
	r.expectPrefix(":")
	held[1].send("PING\r\n")
	held[1].expect("+PONG")
}

// testDrain: Shutdown answers what was received, closes idle connections,
// and refuses new ones. (It cannot release the lease: IDSource has no way to;
// the daemon releases it after the drain.)
func testDrain(t *testing.T) {
	w := startFake(t, nil)
	idle := w.dial(t)
	idle.send("PING\r\n")
	idle.expect("+PONG")
	busy := w.dial(t)
	var pipeline strings.Builder
	for i := 0; i < 200; i++ {
		pipeline.WriteString("NEXTIDS 100\r\n")
	}
	busy.send(pipeline.String())
	time.Sleep(20 * time.Millisecond) // let the server read them
	done := make(chan error, 1)
	go func() { done <- w.srv.Shutdown(context.Background()) }()
	idle.expectClosed()
	n := 0
	for {
		l, err := busy.line()
		if err != nil {
			break
		}
		if strings.HasPrefix(l, "*") {
			n++
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n != 200 {
		t.Fatalf("%d of 200 pipelined replies before the close", n)
	}
	select {
	case <-w.srv.Done():
	default:
		t.Fatal("Done not closed after Shutdown returned")
	}
	if _, err := w.client().Ping(context.Background()).Result(); err == nil {
		t.Fatal("new connection served after Shutdown")
	}
	_ = w.srv.Shutdown(context.Background()) // twice is fine
}

// testDrainTimeout: a client that never reads its replies holds the drain
// up to DrainTimeout; then Shutdown closes it and reports the timeout.
func testDrainTimeout(t *testing.T) {
	w := startFake(t, func(c *Config) { c.DrainTimeout = 300 * time.Millisecond })
	r := w.dial(t)
	r.send(strings.Repeat("NEXTIDS 4096\r\n", 200)) // far more than the socket buffers hold
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	err := w.srv.Shutdown(context.Background())
	if err == nil || !strings.Contains(err.Error(), "drain") {
		t.Fatalf("Shutdown = %v, want a drain timeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("Shutdown took %v with a 300ms DrainTimeout", d)
	}
	if n := w.srv.open.Load(); n != 0 {
		t.Fatalf("%d connections open after Shutdown", n)
	}
	select {
	case <-w.srv.Done():
	default:
		t.Fatal("Done not closed after Shutdown returned")
	}
}

// testLeaseLost: cut off from ZooKeeper, the worker serves up to its
// ceiling, then answers -NOLEASE and /readyz 503; healed, it serves again.
func testLeaseLost(t *testing.T, zk *zktest.Server) {
	proxy := faultproxy.New(t, zk.Addr())
	// The connection stays open after a refusal, so that go-redis (no
	// retries) reads each one; the close is TestCloseOnNoLease's.
	w := startWorker(t, proxy.Addr(), true, func(c *Config) { c.CloseOnNoLease = false })
	c := w.client()
	ctx := context.Background()
	if err := c.Do(ctx, "NEXTID").Err(); err != nil {
		t.Fatal(err)
	}
	proxy.Blackhole()
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for {
		err = c.Do(ctx, "NEXTID").Err()
		if err != nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err == nil || !strings.HasPrefix(err.Error(), "NOLEASE ") {
		t.Fatalf("NEXTID after the cut = %v, want NOLEASE", err)
	}
	t.Logf("cut off: %v", err)
	if err := c.Do(ctx, "NEXTIDS", "3").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOLEASE ") {
		t.Fatalf("NEXTIDS after the cut = %v", err)
	}
	resp, herr := http.Get(w.admin.URL + "/readyz")
	if herr != nil {
		t.Fatal(herr)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz = %d, want 503", resp.StatusCode)
	}
	proxy.Heal()
	deadline = time.Now().Add(20 * time.Second)
	for c.Do(ctx, "NEXTID").Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not serving 20s after heal: %+v", w.coord.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestNoZooKeeper: with ZooKeeper unreachable the server is up, answers
// PING, refuses IDs with -NOLEASE naming the state, and /readyz is 503.
// A registry that has the server's metrics already is a caller's mistake to
// report, not a panic.
func TestMetricsRegisteredTwice(t *testing.T) {
	coord, err := coordinator.New(insecureCoordConfig(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	if _, err := New(DefaultConfig(), coord, nil, reg); err != nil {
		t.Fatalf("first server: %v", err)
	}
	_, err = New(DefaultConfig(), coord, nil, reg)
	if err == nil || !strings.Contains(err.Error(), "register metrics") {
		t.Fatalf("second server on the same registry: %v, want a register metrics error", err)
	}
}

func TestNoZooKeeper(t *testing.T) {
	// The connection stays open after a refusal, so that go-redis (no
	// retries) reads each one; the close is TestCloseOnNoLease's.
	w := startWorker(t, "127.0.0.1:1", false, func(c *Config) { c.CloseOnNoLease = false })
	c := w.client()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]any{{"NEXTID"}, {"NEXTIDS", "10"}} {
		err := c.Do(ctx, args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOLEASE this worker holds no lease (state connecting)") {
			t.Fatalf("%v = %v, want NOLEASE naming the state", args, err)
		}
	}
	if err := c.Do(ctx, "DECODE", "1724551110457221119").Err(); err != nil {
		t.Fatalf("DECODE needs no lease: %v", err)
	}
	resp, err := http.Get(w.admin.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.HasPrefix(string(b), "no_lease (state connecting)") {
		t.Fatalf("/readyz = %d %q, want 503", resp.StatusCode, b)
	}
}

// testZeroAlloc: NEXTID and NEXTIDS, from parse to reply buffered, allocate
// nothing.
func testZeroAlloc(t *testing.T) {
	w := startFake(t, nil)
	c := newConn(w.srv, nil, 1)
	c.wbuf = make([]byte, 0, 128<<10)
	one := [][]byte{[]byte("NEXTID")}
	// 64 IDs a request: the generator's one pair of allocations per
	// millisecond (its wait gate, when a millisecond's 4,096 are used up)
	// averages out below one per request; NEXTIDS 4096 pays it every time.
	many := [][]byte{[]byte("NEXTIDS"), []byte("64")}
	oneStr := [][]byte{[]byte("NEXTID"), []byte("STRING")}
	manyStr := [][]byte{[]byte("NEXTIDS"), []byte("64"), []byte("string")}
	for _, args := range [][][]byte{one, many, oneStr, manyStr} {
		allocs := testing.AllocsPerRun(200, func() {
			c.wbuf = c.wbuf[:0]
			if !c.exec(args) || c.wbuf[0] == '-' {
				t.Fatalf("%s: %q", args[0], c.wbuf)
			}
		})
		if allocs != 0 {
			t.Errorf("%s allocates %.1f times per request, want 0", args[0], allocs)
		}
	}
}

// stepClock is the system clock plus an offset a test moves.
type stepClock struct{ offset atomic.Int64 }

func (c *stepClock) UnixNano() int64       { return time.Now().UnixNano() + c.offset.Load() }
func (c *stepClock) Sleep(d time.Duration) { snowflake.SystemClock{}.Sleep(d) }
func (c *stepClock) step(d time.Duration)  { c.offset.Add(int64(d)) }

// testClockBack: a clock stepped back past the generator's wait makes every
// ID command answer -CLOCKBACK saying by how much, and /readyz 503; once the
// clock is right again, IDs flow again.
func testClockBack(t *testing.T, zk *zktest.Server) {
	clock := &stepClock{}
	// The connection stays open after a refusal here, so that go-redis
	// (no retries) reads each refusal; closing is TestCloseOnNoLease's.
	keep := func(c *Config) { c.CloseOnNoLease = false }
	w := startWorkerWith(t, zk.Addr(), true, keep, func(cc *coordinator.Config) {
		cc.SessionTimeout, cc.Renew, cc.Horizon, cc.Clock = 2*time.Second, 200*time.Millisecond, 5*time.Second, clock
		cc.OnClockBack = snowflake.Refuse
	})
	c := w.client()
	ctx := context.Background()
	if err := c.Do(ctx, "NEXTID").Err(); err != nil {
		t.Fatal(err)
	}
	clock.step(-3 * time.Second)
	for _, args := range [][]any{{"NEXTID"}, {"NEXTIDS", "5"}} {
		err := c.Do(ctx, args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "CLOCKBACK the clock is ") || !strings.Contains(err.Error(), "ms behind the last issued ID") {
			t.Fatalf("%v with the clock 3s back = %v, want CLOCKBACK", args, err)
		}
		if ms, _ := strconv.Atoi(strings.TrimSuffix(strings.Fields(err.Error())[4], "ms")); ms < 2900 || ms > 3100 {
			t.Fatalf("CLOCKBACK says %dms, the clock is 3000ms back: %v", ms, err)
		}
	}
	resp, err := http.Get(w.admin.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("/readyz with the clock back = %d", resp.StatusCode)
	}
	clock.step(3 * time.Second)
	deadline := time.Now().Add(10 * time.Second)
	for c.Do(ctx, "NEXTID").Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not serving 10s after the clock was fixed: %+v", w.coord.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// testSlowReader: a client that sends requests but never reads the replies
// is dropped after WriteTimeout, and counted.
func testSlowReader(t *testing.T) {
	w := startFake(t, func(c *Config) { c.WriteTimeout = 300 * time.Millisecond })
	r := w.dial(t)
	go func() {
		req := []byte(strings.Repeat("NEXTIDS 4096\r\n", 100))
		for i := 0; i < 100; i++ {
			if _, err := r.nc.Write(req); err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(15 * time.Second)
	// The server may not have counted the connection yet: wait for it to
	// open before waiting for it to be dropped.
	for w.srv.open.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("slow reader never counted as connected")
		}
		time.Sleep(time.Millisecond)
	}
	for w.srv.open.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("slow reader still connected after 15s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(w.admin.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `snowflake_worker_connection_timeouts_total{kind="write"} 1`) {
		t.Fatalf("write timeout not counted:\n%s", b)
	}
	if err := w.client().Do(context.Background(), "NEXTID").Err(); err != nil {
		t.Fatalf("other clients after the slow reader: %v", err)
	}
}

// testClockBackLogical: with --on-clock-back logical (the default) a clock
// stepped back 2 s costs no refusal and no readiness: IDs go on ascending,
// INFO and /status show the lead and the IDs issued on logical time.
func testClockBackLogical(t *testing.T, zk *zktest.Server) {
	clock := &stepClock{}
	w := startWorkerWith(t, zk.Addr(), true, nil, func(cc *coordinator.Config) {
		cc.SessionTimeout, cc.Renew, cc.Horizon, cc.Clock = 2*time.Second, 200*time.Millisecond, 5*time.Second, clock
		// Wide: a renew inside the loop below would otherwise measure the
		// 2 s step as skew against ZooKeeper and turn the worker not ready
		// (the skew guard, tested on its own), which is not what this
		// test is about.
		cc.MaxSkew = 10 * time.Second
	})
	c := w.client()
	ctx := context.Background()
	prev, err := c.Do(ctx, "NEXTID").Int64()
	if err != nil {
		t.Fatal(err)
	}
	clock.step(-2 * time.Second)
	for i := 0; i < 50; i++ {
		ids, err := c.Do(ctx, "NEXTIDS", "100").Int64Slice()
		if err != nil {
			t.Fatalf("NEXTIDS with the clock 2s back: %v", err)
		}
		if ids[0] <= prev {
			t.Fatalf("ID %d after %d", ids[0], prev)
		}
		prev = ids[len(ids)-1]
	}
	resp, err := http.Get(w.admin.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/readyz on a logical clock = %d, want 200", resp.StatusCode)
	}
	info, err := c.Info(ctx).Result()
	if err != nil || !strings.Contains(info, "logical_issued:5000\r\n") || strings.Contains(info, "lead_ms:0\r\n") {
		t.Fatalf("INFO on a logical clock = %q, %v; want lead_ms above 0 and logical_issued:5000", info, err)
	}
}
