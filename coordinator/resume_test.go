package coordinator

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/integration/faultproxy"
)

// cutPastSession cuts w's proxy for longer than its session timeout while
// w serves, then heals it, and waits until w has lost the lease and
// serves again: the generator it served before the cut is returned.
func cutPastSession(t *testing.T, p *faultproxy.Proxy, w *worker, during func()) {
	t.Helper()
	p.Blackhole()
	time.Sleep(w.c.cfg.SessionTimeout + time.Second) // ZooKeeper expires the session
	if during != nil {
		during()
	}
	p.Heal()
	waitFor(t, 20*time.Second, w.name+" learns its lease is lost", func() bool { return w.losses() >= 1 })
}

// A holder whose session expired while nobody took its slot (a full
// datacenter, no standby) claims the slot again from the last ID it
// issued, not from the reservation it had itself written ahead: it serves
// again long before that reservation, and above everything it issued.
func TestLostSlotResumedFromLastIssued(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	rec := newRecorder()
	cfg := testConfig(p.Addr(), p.Addr(), p.Addr())
	cfg.Horizon, cfg.MaxReservationWait = 30*time.Second, 40*time.Second
	reg := prometheus.NewRegistry()
	a := startWorkerWith(t, "A", pinned(cfg, testSlot), rec, reg)
	a.waitReady(10 * time.Second)
	time.Sleep(300 * time.Millisecond)
	gA := a.c.Generator()
	ceilA := gA.Ceiling()
	cutPastSession(t, p, a, nil)
	waitFor(t, 25*time.Second, "A serves again", func() bool {
		g := a.c.Generator()
		return g != nil && g != gA && a.c.Ready()
	})
	time.Sleep(200 * time.Millisecond)
	hs := rec.holdings(testSlot)
	if len(hs) != 2 || hs[0].gen != gA {
		t.Fatalf("holdings %+v, want A's lease before the cut and after", hs)
	}
	st := a.c.Status()
	if st.FloorMs >= ceilA {
		t.Fatalf("resumed from %d, the lost lease's own reservation %d: it waited for nothing", st.FloorMs, ceilA)
	}
	if st.FloorMs < hs[0].max {
		t.Fatalf("resumed from %d, below the last ID it issued (%d)", st.FloorMs, hs[0].max)
	}
	if n := counterValue(t, reg, "snowflake_coordinator_lease_resumes_total", "", ""); n != 1 {
		t.Fatalf("lease_resumes_total = %v, want 1", n)
	}
	obs := observer(t, zs.Addr())
	r, _ := readSlot(t, obs, "/snowflake", testSlot)
	if r.Holder != st.LeaseNode {
		t.Fatalf("slot names %q, want the resumed lease %q", r.Holder, st.LeaseNode)
	}
	// The lost tenure ends where the resumed one starts: the IDs above
	// belong to the new lease (#41).
	if h := r.History.Tenures; len(h) != 2 || h[0].CeilingMs != st.FloorMs || h[1].FloorMs != st.FloorMs || h[1].Lease != st.LeaseNode {
		t.Fatalf("history %+v: want the lost tenure ending at the resumed floor %d, then the resumed lease %s", h, st.FloorMs, st.LeaseNode)
	}
	rec.checkDisjoint(t)
}

// The slot was claimed by another while the holder was cut off: back, the
// holder claims it from what the slot node says (the other's release),
// never from its own last ID.
func TestLostSlotHeldMeanwhileNotResumed(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	rec := newRecorder()
	cfg := testConfig(p.Addr(), p.Addr(), p.Addr())
	cfg.Horizon = 2 * time.Second
	reg := prometheus.NewRegistry()
	a := startWorkerWith(t, "A", pinned(cfg, testSlot), rec, reg)
	a.waitReady(10 * time.Second)
	time.Sleep(300 * time.Millisecond)
	cutPastSession(t, p, a, func() {
		b := startWorker(t, "B", pinned(testConfig(zs.Addr()), testSlot), rec)
		b.waitReady(15 * time.Second)
		time.Sleep(300 * time.Millisecond)
		b.Stop() // released: the slot names B, reserved to B's last ID
	})
	waitFor(t, 20*time.Second, "A serves again", func() bool { return len(rec.holdings(testSlot)) == 3 })
	hs := rec.holdings(testSlot)
	if hs[1].worker != "B" || hs[2].worker != "A" {
		t.Fatalf("holdings %+v, want A, B, A", hs)
	}
	if f := a.c.Status().FloorMs; f < hs[1].max {
		t.Fatalf("A claimed again from %d, below B's last ID %d", f, hs[1].max)
	}
	if n := counterValue(t, reg, "snowflake_coordinator_lease_resumes_total", "", ""); n != 0 {
		t.Fatalf("lease_resumes_total = %v, want 0: B held the slot meanwhile", n)
	}
	rec.checkDisjoint(t)
}
