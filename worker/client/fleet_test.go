package client

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

func TestMain(m *testing.M) { os.Exit(fleettest.Main(m)) }

const testRoot = "/client-test"

func startFleet(t *testing.T, n int) (*zktest.Server, []*fleettest.Worker) {
	return fleettest.StartFleet(t, testRoot, n)
}

func newTestClient(t *testing.T, cfg Config) (*Client, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	log := hclog.New(&hclog.LoggerOptions{Name: "client", Level: hclog.Info, Output: testWriter{t}})
	c, err := New(cfg, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, reg
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Logf("%s", p); return len(p), nil }

// stream calls Next and NextN from several goroutines until stop is closed,
// and returns every ID and every error the callers saw.
type stream struct {
	mu     sync.Mutex
	ids    []int64
	errs   []error
	calls  atomic.Int64
	stop   chan struct{}
	wg     sync.WaitGroup
	client *Client
}

func startStream(c *Client, goroutines int) *stream {
	s := &stream{stop: make(chan struct{}), client: c}
	for g := range goroutines {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			var local []int64
			var errs []error
			for i := 0; ; i++ {
				select {
				case <-s.stop:
					s.mu.Lock()
					s.ids = append(s.ids, local...)
					s.errs = append(s.errs, errs...)
					s.mu.Unlock()
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if (g+i)%3 == 0 {
					ids, err := c.NextN(ctx, 1+i%64)
					if err != nil {
						errs = append(errs, err)
					}
					local = append(local, ids...)
				} else {
					id, err := c.Next(ctx)
					if err != nil {
						errs = append(errs, err)
					} else {
						local = append(local, id)
					}
				}
				cancel()
				s.calls.Add(1)
			}
		}()
	}
	return s
}

// finish stops the stream and fails the test on any error or repeated ID.
func (s *stream) finish(t *testing.T) []int64 {
	t.Helper()
	close(s.stop)
	s.wg.Wait()
	for i, err := range s.errs {
		if i < 5 {
			t.Errorf("caller saw an error: %v", err)
		}
	}
	if len(s.errs) > 0 {
		t.Fatalf("%d of %d calls failed", len(s.errs), s.calls.Load())
	}
	checkUnique(t, s.ids)
	return s.ids
}

func checkUnique(t *testing.T, ids []int64) {
	t.Helper()
	sorted := append([]int64(nil), ids...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			t.Fatalf("ID %d issued twice (of %d IDs)", sorted[i], len(sorted))
		}
	}
	for _, id := range sorted {
		if _, err := snowflake.Decode(id); err != nil {
			t.Fatalf("ID %d does not decode: %v", id, err)
		}
	}
}

func slotsOf(ids []int64) map[string]int {
	out := map[string]int{}
	for _, id := range ids {
		f, _ := snowflake.Decode(id)
		out[f.Slot().String()]++
	}
	return out
}

// waitIDs lets the stream run until it has made at least n more calls.
func (s *stream) waitCalls(t *testing.T, n int64) {
	t.Helper()
	target := s.calls.Load() + n
	if !fleettest.WaitFor(context.Background(), 20*time.Second, func() bool { return s.calls.Load() >= target }) {
		t.Fatalf("stream stalled at %d calls", s.calls.Load())
	}
}

func waitEndpoints(t *testing.T, c *Client, want int) {
	t.Helper()
	if !fleettest.WaitFor(context.Background(), 15*time.Second, func() bool { return len(c.Endpoints()) == want }) {
		t.Fatalf("endpoints %v, want %d of them", c.Endpoints(), want)
	}
}

func TestDiscoveryFollowsKillAndTerm(t *testing.T) {
	zks, ws := startFleet(t, 3)
	cfg := DefaultConfig()
	cfg.Servers, cfg.Root, cfg.SessionTimeout = []string{zks.Addr()}, testRoot, 2*time.Second
	c, reg := newTestClient(t, cfg)
	waitEndpoints(t, c, 3)
	if got := value(c.m.endpoints); got != 3 {
		t.Errorf("snowflake_client_endpoints = %v, want 3", got)
	}

	s := startStream(c, 6)
	s.waitCalls(t, 300)

	t.Run("kill -9", func(t *testing.T) {
		ws[0].Kill()
		s.waitCalls(t, 300)
		// The lease node goes with the session, about 2s after the kill.
		waitEndpoints(t, c, 2)
		for _, a := range c.Endpoints() {
			if a == ws[0].Addr {
				t.Fatalf("killed worker %s still listed in %v", a, c.Endpoints())
			}
		}
		s.waitCalls(t, 300)
	})
	t.Run("SIGTERM", func(t *testing.T) {
		if err := ws[1].Term(10 * time.Second); err != nil {
			t.Errorf("worker exit after SIGTERM: %v\n%s", err, ws[1].Log())
		}
		// A released lease node is deleted at once.
		waitEndpoints(t, c, 1)
		if got := c.Endpoints(); got[0] != ws[2].Addr {
			t.Fatalf("endpoints %v, want only %s", got, ws[2].Addr)
		}
		s.waitCalls(t, 300)
	})
	ids := s.finish(t)
	per := slotsOf(ids)
	t.Logf("%d IDs from %d calls, per slot %v; retries %v, requests broken %v nolease %v",
		len(ids), s.calls.Load(), per, value(c.m.retries),
		value(c.m.broken), value(c.m.noLease))
	if len(per) != 3 {
		t.Errorf("IDs came from slots %v, want all 3 workers' slots", per)
	}
	if n := value(c.m.retries); n == 0 {
		t.Errorf("no retry counted although a worker was killed mid-stream")
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
	}
	for _, want := range []string{"snowflake_client_requests_total", "snowflake_client_retries_total", "snowflake_client_endpoints", "snowflake_client_failures_total"} {
		if !names[want] {
			t.Errorf("metric %s not registered (have %v)", want, names)
		}
	}
}

func TestStaticList(t *testing.T) {
	_, ws := startFleet(t, 2)
	dead := zktest.FreeAddr(t) // nothing listens: a worker that is gone
	cfg := DefaultConfig()
	cfg.Static = []string{ws[0].Addr, ws[1].Addr, dead}
	cfg.Backoff, cfg.MaxBackoff = 20*time.Millisecond, 100*time.Millisecond
	c, _ := newTestClient(t, cfg)
	if got := c.Endpoints(); len(got) != 3 {
		t.Fatalf("endpoints %v, want the 3 static addresses", got)
	}
	s := startStream(c, 4)
	s.waitCalls(t, 500)
	ws[0].Kill()
	s.waitCalls(t, 500)
	ids := s.finish(t)
	if per := slotsOf(ids); len(per) != 2 {
		t.Errorf("IDs came from slots %v, want both workers'", per)
	}
	if n := value(c.m.broken); n == 0 {
		t.Errorf("the dead address was never tried (requests_total{result=broken} = 0)")
	}
	if got := c.Endpoints(); len(got) != 3 {
		t.Errorf("a static list changed: %v", got)
	}
}

func TestNoLeaseWorkerIsSkipped(t *testing.T) {
	zks, ws := startFleet(t, 1)
	// This worker's ZooKeeper never answers: it listens, but holds no lease.
	proxy := faultproxy.New(t, zks.Addr())
	proxy.Blackhole()
	lame := fleettest.Start(t, fleettest.Options{ZK: proxy.Addr(), Root: testRoot})
	var refused *ReplyError
	if !fleettest.WaitFor(context.Background(), 15*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn, err := Dial(ctx, lame.Addr)
		if err != nil {
			return false
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		_, err = conn.Next()
		return asReply(err, &refused)
	}) {
		t.Fatalf("worker without ZooKeeper never answered; log:\n%s", lame.Log())
	}
	if refused.Code != CodeNoLease {
		t.Fatalf("worker without a lease answered %v, want -NOLEASE", refused)
	}
	t.Logf("lame worker answers: %v", refused)

	cfg := DefaultConfig()
	cfg.Static = []string{ws[0].Addr, lame.Addr}
	cfg.Backoff, cfg.MaxBackoff = 5*time.Millisecond, 10*time.Millisecond
	c, _ := newTestClient(t, cfg)
	s := startStream(c, 3)
	if !fleettest.WaitFor(context.Background(), 10*time.Second, func() bool { return value(c.m.noLease) >= 5 }) {
		t.Errorf("the worker without a lease was tried %v times, want 5 or more", value(c.m.noLease))
	}
	ids := s.finish(t)
	if per := slotsOf(ids); len(per) != 1 {
		t.Errorf("IDs came from slots %v, want only the leased worker's", per)
	}
}

func TestCallsFailWithoutWorkers(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Static = []string{zktest.FreeAddr(t)}
	c, _ := newTestClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := c.Next(ctx)
	if !isNoWorkers(err) || !isDeadline(err) {
		t.Fatalf("Next with no live worker = %v; want ErrNoWorkers and context.DeadlineExceeded", err)
	}
	if _, err := c.NextN(context.Background(), 0); !isBadCount(err) {
		t.Fatalf("NextN(0) = %v, want ErrBadCount", err)
	}
	if _, err := c.NextN(context.Background(), MaxBatch+1); !isBadCount(err) {
		t.Fatalf("NextN(%d) = %v, want ErrBadCount", MaxBatch+1, err)
	}
	c.Close()
	if _, err := c.Next(context.Background()); !isClosed(err) {
		t.Fatalf("Next after Close = %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestNextNContiguousBatch(t *testing.T) {
	_, ws := startFleet(t, 1)
	cfg := DefaultConfig()
	cfg.Static = []string{ws[0].Addr}
	c, _ := newTestClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, n := range []int{1, 2, 100, MaxBatch} {
		ids, err := c.NextN(ctx, n)
		if err != nil {
			t.Fatalf("NextN(%d): %v", n, err)
		}
		if len(ids) != n {
			t.Fatalf("NextN(%d) gave %d IDs", n, len(ids))
		}
		for i := 1; i < n; i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("NextN(%d): ids[%d]=%d after %d", n, i, ids[i], ids[i-1])
			}
		}
	}
}

func TestCloseWithZooKeeperAway(t *testing.T) {
	zks := zktest.Start(t)
	proxy := faultproxy.New(t, zks.Addr())
	proxy.Blackhole()
	cfg := DefaultConfig()
	cfg.Servers, cfg.Root = []string{proxy.Addr()}, testRoot
	c, _ := newTestClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c.Next(ctx); !isNoWorkers(err) {
		t.Fatalf("Next before any discovery = %v, want ErrNoWorkers", err)
	}
	done := make(chan struct{})
	start := time.Now()
	go func() { c.Close(); close(done) }()
	defer func() { t.Logf("Close took %v", time.Since(start)) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs while ZooKeeper does not answer")
	}
}

func TestClockBackWorkerIsSkipped(t *testing.T) {
	zks, ws := startFleet(t, 1)
	// The chaos build reads its clock offset from a file.
	clockFile := filepath.Join(t.TempDir(), "clock")
	if err := os.WriteFile(clockFile, []byte("0s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	behind := fleettest.Start(t, fleettest.Options{ZK: zks.Addr(), Root: testRoot, Tags: "chaos",
		Renew: 200 * time.Millisecond, Horizon: time.Second,
		Env: []string{"SNOWFLAKE_CHAOS_CLOCK_FILE=" + clockFile}})
	behind.WaitReady(20 * time.Second)
	probe := dialT(t, behind.Addr)
	if _, err := probe.Next(); err != nil {
		t.Fatalf("chaos worker before the step: %v", err)
	}
	// Step its clock 5s back, behind the ID it just issued.
	if err := os.WriteFile(clockFile, []byte("-5s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var refused *ReplyError
	if !fleettest.WaitFor(context.Background(), 5*time.Second, func() bool {
		_, err := probe.Next()
		return asReply(err, &refused) && refused.Code == CodeClockBack
	}) {
		t.Fatalf("worker with its clock stepped back never answered -CLOCKBACK (last %v); log:\n%s", refused, behind.Log())
	}
	t.Logf("stepped-back worker answers: %v", refused)

	cfg := DefaultConfig()
	cfg.Static = []string{ws[0].Addr, behind.Addr}
	cfg.Backoff, cfg.MaxBackoff = 5*time.Millisecond, 10*time.Millisecond
	c, _ := newTestClient(t, cfg)
	s := startStream(c, 3)
	if !fleettest.WaitFor(context.Background(), 10*time.Second, func() bool { return value(c.m.clockBack) >= 5 }) {
		t.Errorf("the stepped-back worker was tried %v times, want 5 or more", value(c.m.clockBack))
	}
	ids := s.finish(t)
	if per := slotsOf(ids); len(per) != 1 {
		t.Errorf("IDs came from slots %v, want only the good worker's", per)
	}
}

func TestIdleConnectionsAreNotReused(t *testing.T) {
	zks := zktest.Start(t)
	// This worker closes connections idle for 300ms.
	w := fleettest.Start(t, fleettest.Options{ZK: zks.Addr(), Root: testRoot, Args: []string{"--idle-timeout", "300ms"}})
	w.WaitReady(20 * time.Second)
	cfg := DefaultConfig()
	cfg.Static, cfg.IdleTimeout, cfg.PoolSize = []string{w.Addr}, 100*time.Millisecond, 1
	c, _ := newTestClient(t, cfg)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		time.Sleep(500 * time.Millisecond) // the worker closes the connection meanwhile
	}
	if n := value(c.m.broken); n != 0 {
		t.Errorf("%v requests went to a connection the worker had closed", n)
	}
}
