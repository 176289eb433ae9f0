package coordinator

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// A worker whose clock is behind a slot's stored reservation waits until
// its clock is past it, and its first timestamp is above the reservation.
func TestClockBehindReservationAtClaim(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	a := startWorker(t, "A", pinned(testConfig(zs.Addr()), testSlot), rec)
	a.waitReady(10 * time.Second)
	time.Sleep(200 * time.Millisecond)
	a.Stop()
	obs := observer(t, zs.Addr())
	r, _ := readSlot(t, obs, "/snowflake", testSlot)

	clk := &testClock{}
	clk.Shift(-1500 * time.Millisecond) // restarted with the clock set back
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.Clock = clk
	cfg.MaxSkew = time.Hour // skew has its own test
	b := startWorker(t, "B", cfg, rec)
	b.waitReady(10 * time.Second)
	if now := clk.UnixNano() / 1e6; now <= r.ReservedUntilMs {
		t.Fatalf("serving with the clock at %d, not past the reservation %d", now, r.ReservedUntilMs)
	}
	time.Sleep(200 * time.Millisecond)
	hs := rec.holdings(testSlot)
	if len(hs) != 2 || hs[1].min <= r.ReservedUntilMs {
		t.Fatalf("holdings %+v: successor must start above the reservation %d", hs, r.ReservedUntilMs)
	}
	rec.checkDisjoint(t)
}

// A clock far behind the reservation (beyond MaxReservationWait): the worker
// releases the slot rather than wait, never issues on it, and takes it once
// its clock is right again.
func TestClockFarBehindReservation(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	a := startWorker(t, "A", pinned(testConfig(zs.Addr()), testSlot), rec)
	a.waitReady(10 * time.Second)
	time.Sleep(100 * time.Millisecond)
	a.Stop()
	obs := observer(t, zs.Addr())
	r, _ := readSlot(t, obs, "/snowflake", testSlot)

	clk := &testClock{}
	clk.Shift(-time.Hour)
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.Clock = clk
	cfg.MaxReservationWait = time.Second
	cfg.MaxSkew = time.Hour
	b := startWorker(t, "B", cfg, rec)
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if b.c.Ready() || b.c.Generator() != nil {
			t.Fatal("worker serves a slot reserved an hour past its clock")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if names, _, _ := obs.Children(zklayout.LeasesPath("/snowflake")); len(names) > 1 {
		t.Fatalf("lease nodes piling up: %v", names)
	}
	clk.Shift(time.Hour)
	b.waitReady(10 * time.Second)
	time.Sleep(100 * time.Millisecond)
	if hs := rec.holdings(testSlot); len(hs) != 2 || hs[1].min <= r.ReservedUntilMs {
		t.Fatalf("holdings %+v, want B above the reservation %d", hs, r.ReservedUntilMs)
	}
	rec.checkDisjoint(t)
}

// The clock stepped back (beyond the horizon) while holding: the stored
// reservation never goes down, no timestamp at or below one already issued
// is used, the lease is not ready meanwhile, and serving resumes when the
// clock catches up. The successor still starts above everything.
func TestClockSteppedBackWhileHolding(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	clk := &testClock{}
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.Clock = clk
	cfg.MaxSkew = time.Hour
	cfg.OnClockBack = snowflake.Refuse
	a := startWorker(t, "A", cfg, rec)
	a.waitReady(10 * time.Second)
	obs := observer(t, zs.Addr())

	var stop atomic.Bool
	decreased := make(chan string, 1)
	go func() { // the stored reservation must never go down
		var last int64
		for !stop.Load() {
			r, ok := readSlot(t, obs, "/snowflake", testSlot)
			if ok && r.ReservedUntilMs < last {
				decreased <- "reservation lowered from " + itoa(int(last)) + " to " + itoa(int(r.ReservedUntilMs))
				return
			}
			last = max(last, r.ReservedUntilMs)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	g := a.c.Generator()
	before := g.LastMs()
	clk.Shift(-3 * time.Second)
	waitFor(t, 2*time.Second, "not ready while the clock is behind", func() bool { return !a.c.Ready() })
	time.Sleep(time.Second) // renewals happen with the clock behind
	if _, err := g.Next(); err == nil {
		t.Fatal("generator issued with the clock 3s behind its last timestamp")
	}
	if a.c.Generator() != g {
		t.Fatal("the lease was dropped for a clock step")
	}
	clk.Shift(3 * time.Second)
	a.waitReady(5 * time.Second)
	time.Sleep(200 * time.Millisecond)
	stop.Store(true)
	select {
	case msg := <-decreased:
		t.Fatal(msg)
	default:
	}
	h := rec.holdings(testSlot)
	if len(h) != 1 || h[0].max <= before {
		t.Fatalf("holdings %+v: want serving resumed above %d", h, before)
	}
	a.Stop()
	b := startWorker(t, "B", pinned(testConfig(zs.Addr()), testSlot), rec)
	b.waitReady(10 * time.Second)
	time.Sleep(100 * time.Millisecond)
	rec.checkDisjoint(t)
}

// Skew against the ZooKeeper leader's mtime beyond MaxSkew: measured on
// every write, exported, and the lease is not ready until it is back within
// the bound.
func TestClockSkew(t *testing.T) {
	zs := startZK(t)
	clk := &testClock{}
	clk.Shift(2 * time.Second)
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.Clock = clk
	rec := newRecorder()
	reg := prometheus.NewRegistry()
	a := startWorkerWith(t, "A", cfg, rec, reg)
	waitFor(t, 10*time.Second, "lease held", func() bool { return a.c.Generator() != nil })
	waitFor(t, 5*time.Second, "skew measured", func() bool { return a.c.Status().SkewMs < -1500 })
	if a.c.Ready() {
		t.Fatalf("ready with a skew of %d ms (bound 500 ms)", a.c.Status().SkewMs)
	}
	if v := gaugeValue(t, reg, "snowflake_coordinator_clock_skew_seconds"); v > -1.5 {
		t.Fatalf("exported skew %v s, want about -2", v)
	}
	clk.Shift(-2 * time.Second)
	a.waitReady(5 * time.Second)
	if s := a.c.Status().SkewMs; s < -500 || s > 500 {
		t.Fatalf("skew %d ms after the clock was fixed", s)
	}
	rec.checkDisjoint(t)
}

// TestClockSteppedBackLogical: with the logical clock (the default) a
// holder whose clock steps back 500 ms (half its horizon) stays ready and goes on issuing above
// its last timestamp, its lead shown, never past its ceiling; once the
// clock catches up it is back on wall time.
func TestClockSteppedBackLogical(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	clk := &testClock{}
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.Clock = clk
	cfg.MaxSkew = time.Hour
	a := startWorker(t, "A", cfg, rec)
	a.waitReady(10 * time.Second)
	g := a.c.Generator()
	first, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	clk.Shift(-500 * time.Millisecond)
	prev := first
	for i := 0; i < 20000; i++ {
		id, err := g.Next()
		if err != nil {
			t.Fatalf("after %d IDs with the clock 500ms back: %v", i, err)
		}
		if id <= prev {
			t.Fatalf("ID %d after %d", id, prev)
		}
		prev = id
	}
	if !a.c.Ready() {
		t.Fatalf("not ready on a logical clock: %+v", a.c.Readiness())
	}
	st := a.c.Status()
	if st.LeadMs < 450 || st.LogicalIssued < 20000 {
		t.Fatalf("status lead %d ms, logical %d: want about 500 ms ahead and 20000 IDs", st.LeadMs, st.LogicalIssued)
	}
	f, _ := snowflake.Decode(prev)
	if f.UnixMs > g.Ceiling() {
		t.Fatalf("issued at %d, past the ceiling %d", f.UnixMs, g.Ceiling())
	}
	clk.Shift(550 * time.Millisecond)
	id, err := g.Next()
	if err != nil || id <= prev {
		t.Fatalf("after catching up: %d, %v", id, err)
	}
	if lead := a.c.Status().LeadMs; lead != 0 {
		t.Fatalf("lead %d ms after the clock caught up", lead)
	}
}

// TestClockStepsSeen: a holder's clock stepped forward 3 s and back 2 s is
// seen at the next renewals, by direction, and the forward step is the
// largest gap shown: the metrics an operator reads to tell a step from a
// skew.
func TestClockStepsSeen(t *testing.T) {
	zs := startZK(t)
	clk := &testClock{}
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.Clock = clk
	cfg.MaxSkew = time.Hour
	reg := prometheus.NewRegistry()
	a := startWorkerWith(t, "A", cfg, newRecorder(), reg)
	a.waitReady(10 * time.Second)
	clk.Shift(3 * time.Second)
	waitFor(t, 3*time.Second, "no forward step seen", func() bool {
		return counterValue(t, reg, "snowflake_coordinator_clock_steps_total", "direction", "forward") == 1
	})
	if got := gaugeValue(t, reg, "snowflake_coordinator_clock_forward_step_max_seconds"); got < 2.9 || got > 3.5 {
		t.Fatalf("largest forward step %.3fs, want about 3s", got)
	}
	clk.Shift(-2 * time.Second)
	waitFor(t, 3*time.Second, "no backward step seen", func() bool {
		return counterValue(t, reg, "snowflake_coordinator_clock_steps_total", "direction", "back") == 1
	})
	if got := gaugeValue(t, reg, "snowflake_coordinator_clock_forward_step_max_seconds"); got < 2.9 {
		t.Fatalf("a backward step lowered the largest forward step to %.3fs", got)
	}
}
