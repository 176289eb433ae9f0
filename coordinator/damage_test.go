package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"path"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/snowflake"
)

// counterValue reads the counter name{label=value} from reg, or the
// unlabelled counter name when label is "".
func counterValue(t testing.TB, reg prometheus.Gatherer, name, label, value string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label == "" && len(m.GetLabel()) == 0 {
				return m.GetCounter().GetValue()
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("registry exports no %s{%s=%q}", name, label, value)
	return 0
}

// deleteAll deletes p and everything under it, as zkCli's deleteall does.
func deleteAll(t testing.TB, conn *zk.Conn, p string) {
	t.Helper()
	kids, _, err := conn.Children(p)
	if errors.Is(err, zk.ErrNoNode) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kids {
		deleteAll(t, conn, path.Join(p, k))
	}
	if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
}

func rootLayout(t testing.TB, conn *zk.Conn, root string) string {
	t.Helper()
	data, _, err := conn.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	var info tree.RootInfo
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatalf("root JSON %s: %v", data, err)
	}
	return info.Layout
}

// A held slot's node is deleted by hand, then its holder is killed: the
// successor, whose clock is behind the old holder's last timestamp, refuses
// the slot (error log, metric) instead of starting it at floor 0; after
// snowflakectl repair's RepairSlots it starts above the old holder's last.
func TestSlotNodeDeletedWhileHeld(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	rec := newRecorder()
	cfgA := pinned(testConfig(p.Addr()), testSlot)
	cfgA.Renew, cfgA.Horizon = 3*time.Second, 3500*time.Millisecond // no renew between the edit and the kill
	a := startWorker(t, "A", cfgA, rec)
	a.waitReady(10 * time.Second)
	leaseA := a.c.Status().LeaseNode
	time.Sleep(300 * time.Millisecond)
	obs := observer(t, zs.Addr())
	if err := obs.Delete(zklayout.SlotPath("/snowflake", testSlot), -1); err != nil {
		t.Fatal(err)
	}
	a.Crash()
	p.Blackhole()
	lastA := rec.holdings(testSlot)[0].max

	clk := &testClock{}
	clk.Shift(-3 * time.Second) // behind the old holder's last timestamp once its session is gone
	cfgC := pinned(testConfig(zs.Addr()), testSlot)
	cfgC.Clock, cfgC.MaxSkew, cfgC.MaxReservationWait = clk, time.Hour, 10*time.Second
	reg := prometheus.NewRegistry()
	c := startWorkerWith(t, "C", cfgC, rec, reg)
	// A's session expires after 2s; C then finds the slot free but its node
	// missing.
	waitFor(t, 10*time.Second, "the killed holder's lease node gone", func() bool {
		names, _, _ := obs.Children(zklayout.LeasesPath("/snowflake"))
		for _, n := range names {
			if n == leaseA {
				return false
			}
		}
		return true
	})
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if c.c.Ready() || c.c.Generator() != nil {
			t.Fatal("successor serves a slot whose node is missing")
		}
	}
	if n := counterValue(t, reg, "snowflake_coordinator_missing_znodes_total", "znode", "slot"); n < 1 {
		t.Fatalf("missing slot node counted %v times, want at least once", n)
	}
	if ok, _, _ := obs.Exists(zklayout.SlotPath("/snowflake", testSlot)); ok {
		t.Fatal("a worker re-created the deleted slot node")
	}
	c.Stop()

	// The operator repairs it a horizon past now (cmd/snowflakectl/README.md).
	// The test's holders reserve only cfgA.Horizon ahead: a short
	// reservation, stated as such.
	res, err := tree.RepairSlots(context.Background(), obs, tree.RepairConfig{Root: "/snowflake",
		Slots: []snowflake.Slot{testSlot}, ReservedUntilMs: time.Now().Add(cfgA.Horizon).UnixMilli(), AllowLow: true})
	if err != nil || len(res.Made) != 1 {
		t.Fatalf("repair: %+v %v", res, err)
	}
	d := startWorker(t, "D", cfgC, rec)
	d.waitReady(15 * time.Second)
	time.Sleep(200 * time.Millisecond)
	hs := rec.holdings(testSlot)
	if len(hs) != 2 || hs[1].worker != "D" || hs[1].min <= lastA {
		t.Fatalf("holdings %+v: the successor must start above the old holder's last %d", hs, lastA)
	}
	rec.checkDisjoint(t)
}

// The whole slots/ tree is deleted while workers serve: they stop serving,
// count it, and neither they nor a worker started afterwards re-create it.
// The holder is killed; after a repair its successor, with a clock behind,
// starts above the old holder's last timestamp.
func TestSlotsTreeDeletedWhileServing(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	rec := newRecorder()
	regB := prometheus.NewRegistry()
	a := startWorker(t, "A", pinned(testConfig(p.Addr()), testSlot), rec)
	b := startWorkerWith(t, "B", testConfig(zs.Addr()), rec, regB)
	a.waitReady(10 * time.Second)
	b.waitReady(10 * time.Second)
	time.Sleep(300 * time.Millisecond)
	obs := observer(t, zs.Addr())
	deleteAll(t, obs, zklayout.SlotsPath("/snowflake"))
	waitFor(t, 5*time.Second, "both holders stop serving", func() bool { return !a.c.Ready() && !b.c.Ready() })
	waitFor(t, 10*time.Second, "missing slots/ counted", func() bool {
		return counterValue(t, regB, "snowflake_coordinator_missing_znodes_total", "znode", "slots") >= 1
	})
	a.Crash()
	p.Blackhole()
	lastA := rec.holdings(testSlot)[0].max

	clk := &testClock{}
	clk.Shift(-2 * time.Second)
	cfgN := pinned(testConfig(zs.Addr()), testSlot)
	cfgN.Clock, cfgN.MaxSkew = clk, time.Hour
	n := startWorker(t, "N", cfgN, rec)
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok, _, _ := obs.Exists(zklayout.SlotsPath("/snowflake")); ok {
			t.Fatal("a worker re-created slots/")
		}
		if a.c.Ready() || b.c.Ready() || n.c.Ready() {
			t.Fatal("a worker serves while slots/ is missing")
		}
	}
	all := make([]snowflake.Slot, snowflake.Slots)
	for i := range all {
		all[i] = snowflake.SlotAt(i)
	}
	res, err := tree.RepairSlots(context.Background(), obs, tree.RepairConfig{Root: "/snowflake", Slots: all,
		ReservedUntilMs: time.Now().Add(testConfig().Horizon).UnixMilli(), AllowLow: true})
	if err != nil || len(res.Made) != snowflake.Slots || len(res.MadeTree) != 1 {
		t.Fatalf("repair: made %d, tree %v, %v", len(res.Made), res.MadeTree, err)
	}
	n.waitReady(20 * time.Second)
	b.waitReady(20 * time.Second)
	time.Sleep(200 * time.Millisecond)
	hs := rec.holdings(testSlot)
	if len(hs) < 2 || hs[len(hs)-1].worker != "N" || hs[len(hs)-1].min <= lastA {
		t.Fatalf("holdings %+v: the successor must start above the old holder's last %d", hs, lastA)
	}
	rec.checkDisjoint(t)
}

// The root is deleted while a worker serves: it stops, counts it, and does
// not re-create the root (workers never make one).
func TestRootDeletedWhileServing(t *testing.T) {
	zs := startZK(t)
	reg := prometheus.NewRegistry()
	a := startWorkerWith(t, "A", testConfig(zs.Addr()), newRecorder(), reg)
	a.waitReady(10 * time.Second)
	obs := observer(t, zs.Addr())
	deleteAll(t, obs, "/snowflake")
	waitFor(t, 5*time.Second, "the holder stops serving", func() bool { return !a.c.Ready() })
	waitFor(t, 10*time.Second, "missing root counted", func() bool {
		return counterValue(t, reg, "snowflake_coordinator_missing_znodes_total", "znode", "root") >= 1
	})
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok, _, _ := obs.Exists("/snowflake"); ok {
			t.Fatal("a running worker re-created the root")
		}
	}
}
