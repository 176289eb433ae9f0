package coordinator

import (
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
)

// The slot node keeps its holders' tenures (#41 item 1): A releases, B's
// session is cut off after it stopped issuing (a kill), C waits out B's
// reservation and releases. The history names the three leases in order,
// each with its process, the released ones marked; the tenures are
// disjoint, and every ID each worker issued lies in its own tenure and in
// no other.
func TestSlotHistoryPlacesEveryID(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	leases := map[string]string{}
	hold := func(name, addr string) *worker {
		w := startWorker(t, name, pinned(testConfig(addr), testSlot), rec)
		w.waitReady(10 * time.Second)
		leases[name] = w.c.Status().LeaseNode
		time.Sleep(300 * time.Millisecond)
		return w
	}
	hold("A", zs.Addr()).Stop()
	p := faultproxy.New(t, zs.Addr())
	b := hold("B", p.Addr())
	b.Crash()
	p.Blackhole()
	hold("C", zs.Addr()).Stop()

	r, _ := readSlot(t, observer(t, zs.Addr()), "/snowflake", testSlot)
	h := r.History
	if len(h.Tenures) != 3 {
		t.Fatalf("history %+v: want the tenures of A, B and C", h)
	}
	names := []string{"A", "B", "C"}
	for i, name := range names {
		tn := h.Tenures[i]
		if tn.Lease != leases[name] || tn.PID == 0 || tn.Host == "" || tn.Kind == "" || tn.StartMs == 0 {
			t.Errorf("tenure %d is %+v: want %s's lease %s, with its host, pid and kind", i, tn, name, leases[name])
		}
		if want := name != "B"; tn.Released != want {
			t.Errorf("%s's tenure released=%v, want %v", name, tn.Released, want)
		}
		if i > 0 && tn.FloorMs < h.Tenures[i-1].CeilingMs {
			t.Errorf("%s's tenure starts at %d, below %s's ceiling %d", name, tn.FloorMs, names[i-1], h.Tenures[i-1].CeilingMs)
		}
	}
	for _, hd := range rec.holdings(testSlot) {
		for _, ms := range []int64{hd.min, hd.max} {
			tn, where := h.Place(ms)
			if where != tree.InTenure || tn.Lease != leases[hd.worker] {
				t.Errorf("%s's ID at %d placed %v in %q, want its own tenure %s", hd.worker, ms, where, tn.Lease, leases[hd.worker])
			}
		}
	}
	if _, where := h.Place(h.Tenures[0].FloorMs); where != tree.BeforeHistory {
		t.Errorf("an ID at the first tenure's floor placed %v, want before the recorded history", where)
	}
	if _, where := h.Place(h.Tenures[2].CeilingMs + 1); where != tree.NoTenure {
		t.Errorf("an ID above the last ceiling placed %v, want in no tenure", where)
	}
	rec.checkDisjoint(t)
}
