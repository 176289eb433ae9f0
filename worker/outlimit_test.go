package worker

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/worker/resp"
)

// stubTransport is a transport for the pure tests of conn: the kernel
// holds nothing unsent.
type stubTransport struct{}

func (stubTransport) flush() bool { return true }
func (stubTransport) unsent() int { return 0 }

// TestShedRefill: a NEXTIDS reply dropped when the socket filled, at any
// byte, and made again chunk by chunk, reaches the client as the bytes it
// would have had whole, in every form, after other replies or alone, and
// what the connection holds once it dropped it is what the socket did not
// take of the element it was in, not the reply.
func TestShedRefill(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: DefaultConfig()}
	const first = 2128468594658009000
	for _, form := range []idForm{formInteger, formString, formShort} {
		for _, before := range []string{"", "+PONG\r\n"} {
			c := &conn{s: s, t: stubTransport{}}
			c.wbuf = append(c.wbuf, before...)
			c.wbuf = resp.AppendArrayHeader(c.wbuf, 4096)
			c.appendRun(first, 4096, form)
			whole := bytes.Clone(c.wbuf)
			for _, out := range []int{0, 1, len(before), len(before) + 9, 1000, 30000, len(whole) - 1} {
				c := &conn{s: s, t: stubTransport{}, wbuf: bytes.Clone(whole), run: c.run}
				got := bytes.Clone(c.wbuf[:out])
				o := c.shed(out)
				if o != 0 && o != out {
					t.Fatalf("%v, out %d: shed returned %d", form, out, o)
				}
				if o == 0 && cap(c.wbuf) > 64 && out > len(before) {
					t.Errorf("%v, out %d: %d bytes kept after the shed", form, out, cap(c.wbuf))
				}
				if waiting := c.outputWaiting(o); waiting < len(whole)-out {
					t.Errorf("%v, out %d: %d bytes waiting, want at least %d", form, out, waiting, len(whole)-out)
				}
				got = append(got, c.wbuf[o:]...)
				for c.refill() {
					if len(c.wbuf) > refillChunk+64 {
						t.Fatalf("%v: a refill of %d bytes", form, len(c.wbuf))
					}
					got = append(got, c.wbuf...)
				}
				if !bytes.Equal(got, whole) {
					i := 0
					for i < min(len(got), len(whole)) && got[i] == whole[i] {
						i++
					}
					t.Fatalf("%v, before %q, out %d: %d bytes reached the client, want %d; first difference at %d",
						form, before, out, len(got), len(whole), i)
				}
			}
		}
	}
}

// TestShedLastReplyOnly: a run followed by another reply is not dropped
// (the reply after it would be lost), nor is anything without a limit.
func TestShedLastReplyOnly(t *testing.T) {
	t.Parallel()
	s := &Server{cfg: DefaultConfig()}
	c := &conn{s: s, t: stubTransport{}}
	c.wbuf = resp.AppendArrayHeader(c.wbuf, 100)
	c.appendRun(1<<60, 100, formInteger)
	c.wbuf = resp.AppendSimple(c.wbuf, "PONG")
	n := len(c.wbuf)
	if o := c.shed(10); o != 10 || len(c.wbuf) != n {
		t.Fatalf("shed dropped a run with a reply after it: out %d, %d of %d bytes left", o, len(c.wbuf), n)
	}
	s0 := &Server{cfg: DefaultConfig()}
	s0.cfg.ClientOutputLimit = 0
	c = &conn{s: s0, t: stubTransport{}}
	c.appendRun(1<<60, 100, formInteger)
	if o := c.shed(10); o != 10 {
		t.Fatalf("shed with no limit: out %d", o)
	}
}

// TestEveryLog: the first close is logged, the next ones within a minute
// are not, and the line after counts them.
func TestEveryLog(t *testing.T) {
	t.Parallel()
	var e everyLog
	t0 := time.Now()
	if n, ok := e.due(t0); !ok || n != 1 {
		t.Fatalf("first: %d, %v", n, ok)
	}
	for i := range 5 {
		if _, ok := e.due(t0.Add(time.Duration(i+1) * time.Second)); ok {
			t.Fatalf("logged again %ds after", i+1)
		}
	}
	if n, ok := e.due(t0.Add(outputLogEvery)); !ok || n != 6 {
		t.Fatalf("a minute after: %d, %v; want 6 closes in the line", n, ok)
	}
}

// TestOutputLimit runs the output limit under both transports.
func TestOutputLimit(t *testing.T) {
	bothServeModes(t, func(t *testing.T) {
		t.Run("non-readers-closed", testOutputLimitCloses)
		t.Run("reader-paused", testOutputLimitReaderPaused)
	})
}

// testOutputLimitCloses: clients pipelining NEXTIDS 4096 STRING that never
// read are closed by the output limit within a few seconds, long before
// the write timeout, counted, and other clients are served meanwhile.
func testOutputLimitCloses(t *testing.T) {
	w := startFake(t, func(c *Config) { c.WriteTimeout = time.Minute })
	const hogs = 3
	for range hogs {
		r := w.dial(t)
		go func() {
			req := []byte(strings.Repeat("NEXTIDS 4096 STRING\r\n", 100))
			for {
				if _, err := r.nc.Write(req); err != nil {
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(outputStall + 10*time.Second)
	for metricValue(t, w, "snowflake_worker_output_limit_closes_total") < hogs {
		if time.Now().After(deadline) {
			t.Fatalf("%v closed by the output limit, want %d", metricValue(t, w, "snowflake_worker_output_limit_closes_total"), hogs)
		}
		if err := w.client().Do(context.Background(), "NEXTID").Err(); err != nil {
			t.Fatalf("another client beside the hogs: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v := metricValue(t, w, `snowflake_worker_connection_timeouts_total{kind="write"}`); v != 0 {
		t.Errorf("%v write timeouts, want the output limit's closes only", v)
	}
}

// testOutputLimitReaderPaused: a client that pipelines NEXTIDS 4096 STRING
// and reads its replies only after a pause shorter than outputStall gets
// every one, in order and contiguous, whatever was dropped and made again
// meanwhile.
func testOutputLimitReaderPaused(t *testing.T) {
	w := startFake(t, nil)
	r := w.dial(t)
	const n = 40
	go func() { _, _ = r.nc.Write([]byte(strings.Repeat("NEXTIDS 4096 STRING\r\n", n))) }()
	time.Sleep(outputStall / 2)
	_ = r.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var last int64
	for i := range n {
		l, err := r.line()
		if err != nil || l != "*4096" {
			t.Fatalf("reply %d: %q, %v", i, l, err)
		}
		for j := range 4096 {
			if l, err := r.line(); err != nil || l != "$19" {
				t.Fatalf("reply %d, ID %d: %q, %v", i, j, l, err)
			}
			l, err := r.line()
			id, perr := strconv.ParseInt(l, 10, 64)
			if err != nil || perr != nil {
				t.Fatalf("reply %d, ID %d: %q, %v", i, j, l, err)
			}
			if j > 0 && id != last+1 || j == 0 && id <= last {
				t.Fatalf("reply %d, ID %d: %d after %d", i, j, id, last)
			}
			last = id
		}
	}
	if v := metricValue(t, w, "snowflake_worker_output_limit_closes_total"); v != 0 {
		t.Errorf("%v closed by the output limit, want none", v)
	}
}

// metricValue is the value of one series on w's /metrics (0 when absent).
func metricValue(t *testing.T, w *testWorker, series string) float64 {
	t.Helper()
	res, err := http.Get(w.admin.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
