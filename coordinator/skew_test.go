package coordinator

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// A clock running ahead of ZooKeeper by more than MaxSkew does not drive
// the reservation: from the claim on, every stored reservation is at most
// Horizon past ZooKeeper's own mtime of that write, so a successor never
// waits out the skew.
func TestSkewedClockBoundsReservation(t *testing.T) {
	zs := startZK(t)
	clk := &testClock{}
	clk.Shift(3 * time.Second) // far beyond MaxSkew (500 ms)
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.Clock = clk
	w := startWorker(t, "W", cfg, newRecorder())
	obs := observer(t, zs.Addr())
	waitFor(t, 10*time.Second, "slot claimed", func() bool {
		_, ok := readSlot(t, obs, cfg.Root, testSlot)
		return ok
	})
	h := cfg.Horizon.Milliseconds()
	var writes int
	for deadline := time.Now().Add(6 * cfg.Renew); time.Now().Before(deadline); time.Sleep(cfg.Renew / 4) {
		r, _ := readSlot(t, obs, cfg.Root, testSlot)
		if r.ReservedUntilMs > r.MtimeMs+h {
			t.Fatalf("write %d (version %d) reserved until %d, %d ms past ZooKeeper's mtime %d: beyond the horizon %d ms",
				writes, r.Version, r.ReservedUntilMs, r.ReservedUntilMs-r.MtimeMs, r.MtimeMs, h)
		}
		writes = int(r.Version)
	}
	if writes < 2 {
		t.Fatalf("only %d renewals seen", writes)
	}
	if w.c.Ready() {
		t.Fatal("ready with the clock 3 s ahead")
	}
	// Back in bound, renewals extend from the clock again.
	clk.Shift(-3 * time.Second)
	w.waitReady(5 * time.Second)
}

// The floor at claim is the higher of the stored reservation and the last
// timestamp the previous holder recorded: a slot node whose last_ms is above
// its reserved_until_ms (a hand edit) still keeps the first ID above last_ms.
func TestFloorAtClaimIsLastMs(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	root := zklayout.DefaultRoot
	acl := zk.WorldACL(zk.PermAll)
	makeRoot(t, obs, root, acl)
	now := time.Now().UnixMilli()
	old := tree.SlotRecord{ReservedUntilMs: now - 5000, LastMs: now + 1500, Holder: "_c_00000000000000000000000000000000-dc03-m04-0000000007", UpdatedMs: now}
	if _, err := obs.Set(zklayout.SlotPath(root, testSlot), tree.EncodeSlot(old), -1); err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	w := startWorker(t, "W", pinned(testConfig(zs.Addr()), testSlot), rec)
	w.waitReady(10 * time.Second)
	time.Sleep(100 * time.Millisecond)
	hs := rec.holdings(testSlot)
	if len(hs) != 1 || hs[0].min <= old.LastMs {
		t.Fatalf("holdings %+v: the first ID must be above the slot's last_ms %d (reserved_until_ms %d)", hs, old.LastMs, old.ReservedUntilMs)
	}
	if f := w.c.Status().FloorMs; f < old.LastMs {
		t.Fatalf("floor %d, below the slot's last_ms %d", f, old.LastMs)
	}
}
