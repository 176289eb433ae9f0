package client

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/fleettest"
)

// Item 1: a caller that waited for a pooled connection longer than
// RequestTimeout still gets the whole RequestTimeout for its request.
func TestBusyPoolDoesNotBackOff(t *testing.T) {
	w := newStandIn(t)
	w.setDelay(50 * time.Millisecond) // slow but healthy: 50 callers queue ~625ms for a slot
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.RequestTimeout = 4, 300*time.Millisecond
	c, lc := newCountingClient(t, cfg, w)
	errs := callAll(c, 50, 20*time.Second)
	if n, first := countErrs(errs); n > 0 {
		t.Errorf("%d of 50 calls failed, the first with: %v", n, first)
	}
	if n := lc.backoffs(); n != 0 {
		t.Errorf("a busy but healthy worker was put in backoff %d times", n)
	}
	if n := value(c.m.broken); n != 0 {
		t.Errorf("%v requests to a healthy worker counted broken", n)
	}
}

// Item 2: a request cut short by the caller's own deadline, earlier than
// RequestTimeout, is no fault of the worker.
func TestCallerDeadlineIsNotBlamedOnWorker(t *testing.T) {
	w := newStandIn(t)
	w.setDelay(200 * time.Millisecond)
	cfg := DefaultConfig()
	cfg.PoolSize = 8
	c, lc := newCountingClient(t, cfg, w)
	var errs []error
	for range 10 {
		errs = append(errs, callAll(c, 8, 20*time.Millisecond)...)
	}
	for _, err := range errs {
		// A call may yet get its ID when the machine is so loaded that the
		// deadline's timer fires late; any error must be the deadline.
		if err != nil && !isDeadline(err) {
			t.Fatalf("a call with 20ms against a worker taking 200ms returned %v, want a deadline error", err)
		}
	}
	if n := lc.backoffs(); n != 0 {
		t.Errorf("the callers' own deadlines put the worker in backoff %d times (of %d calls)", n, len(errs))
	}
	if n := value(c.m.broken); n != 0 {
		t.Errorf("%v requests cut by the callers' deadlines counted broken", n)
	}
}

// Item 3: a worker restart fails the requests in flight and those waiting
// for a connection at once: one failure, one backoff, not one per request.
func TestRestartBeginsOneBackoff(t *testing.T) {
	w := newStandIn(t)
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.Backoff, cfg.MaxBackoff = 4, time.Second, 5*time.Second
	c, lc := newCountingClient(t, cfg, w)
	w.pause()
	errc := make(chan []error, 1)
	go func() { errc <- callAll(c, 12, 20*time.Second) }()
	ep := (*c.eps.Load())[0]
	if !fleettest.WaitFor(context.Background(), 10*time.Second, func() bool {
		return len(w.arrivalTimes()) == 4 && ep.inflight.Load() == 12
	}) {
		t.Fatalf("4 requests in flight and 8 waiting never happened: %d arrived, %d in flight", len(w.arrivalTimes()), ep.inflight.Load())
	}
	w.restart(100 * time.Millisecond) // shorter than the backoff
	w.resume()
	errs := <-errc
	if n, first := countErrs(errs); n > 0 {
		t.Errorf("%d of 12 calls failed, the first with: %v", n, first)
	}
	if first, again := lc.first.Load(), lc.again.Load(); first != 1 || again != 0 {
		t.Errorf("one restart began %d backoff streaks and extended them %d times; want 1 and 0", first, again)
	}
}

// Item 3: a success sent before a refusal says nothing about the worker
// now; it must not end the backoff the refusal began.
func TestLateSuccessDoesNotEndBackoff(t *testing.T) {
	w := newStandIn(t)
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.Backoff, cfg.MaxBackoff = 2, 5*time.Second, 5*time.Second
	c, lc := newCountingClient(t, cfg, w)
	w.setDelay(500 * time.Millisecond)
	slow := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Next(ctx)
		slow <- err
	}()
	if !fleettest.WaitFor(context.Background(), 10*time.Second, func() bool { return len(w.arrivalTimes()) == 1 }) {
		t.Fatal("the first request never arrived")
	}
	// The worker loses its lease: a second request is refused at once, and
	// only then is the first one answered, with an ID.
	w.setDelay(0)
	w.noLease.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var re *ReplyError
	if _, err := c.Next(ctx); !asReply(err, &re) || re.Code != CodeNoLease {
		t.Fatalf("Next on a worker without a lease = %v, want its -NOLEASE", err)
	}
	if err := <-slow; err != nil {
		t.Fatalf("the request sent before the refusal: %v", err)
	}
	if ep := (*c.eps.Load())[0]; ep.healthy(time.Now().UnixNano()) {
		t.Errorf("the worker left backoff after a refusal (backoffs logged: %d)", lc.backoffs())
	}
}

// Item 4: callers waiting while every worker is in backoff wake up spread
// out, not all at the instant the first backoff ends.
func TestWaitersWakeSpreadOut(t *testing.T) {
	w := newStandIn(t)
	cfg := DefaultConfig()
	cfg.PoolSize, cfg.Backoff, cfg.MaxBackoff = 64, time.Second, time.Second
	c, _ := newCountingClient(t, cfg, w)
	w.noLease.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err := c.Next(ctx)
	cancel()
	var re *ReplyError
	if !asReply(err, &re) {
		t.Fatalf("Next on a refusing worker = %v, want its -NOLEASE", err)
	}
	w.noLease.Store(false)
	start := time.Now()
	errs := callAll(c, 32, 10*time.Second)
	if n, first := countErrs(errs); n > 0 {
		t.Fatalf("%d of 32 calls failed, the first with: %v", n, first)
	}
	var woke []time.Time
	for _, at := range w.arrivalTimes() {
		if at.After(start) {
			woke = append(woke, at)
		}
	}
	if len(woke) < 32 {
		t.Fatalf("%d requests after the backoff, want 32", len(woke))
	}
	spread := slices.MaxFunc(woke, time.Time.Compare).Sub(slices.MinFunc(woke, time.Time.Compare))
	if spread < 100*time.Millisecond {
		t.Errorf("32 waiters reached the worker within %v of each other after a 1s backoff; want them spread over 100ms or more", spread)
	}
}

// Item 5: a caller waiting on a worker that discovery drops gets another
// worker or ErrNoWorkers, never ErrClosed, which means the Client is closed.
func TestDroppedWorkerIsNotErrClosed(t *testing.T) {
	w := newStandIn(t)
	cfg := DefaultConfig()
	cfg.PoolSize = 1
	c, _ := newCountingClient(t, cfg, w)
	w.pause()
	defer w.resume()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = c.Next(ctx) // holds the only connection
	}()
	ep := (*c.eps.Load())[0]
	waiting := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := c.Next(ctx)
		waiting <- err
	}()
	if !fleettest.WaitFor(context.Background(), 10*time.Second, func() bool { return ep.inflight.Load() == 2 }) {
		t.Fatalf("never had one call in flight and one waiting (%d)", ep.inflight.Load())
	}
	c.setEndpoints(nil) // discovery drops the worker
	err := <-waiting
	if isClosed(err) {
		t.Errorf("a call on an open Client returned %v, which is ErrClosed", err)
	}
	if !isNoWorkers(err) {
		t.Errorf("a call left without workers returned %v, want ErrNoWorkers", err)
	}
}
