package coordinator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/snowflake"
)

// initRootT runs InitRoot, failing the test on an error.
func initRootT(t testing.TB, conn *zk.Conn, cfg tree.InitConfig) tree.InitResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := tree.InitRoot(ctx, conn, cfg)
	if err != nil {
		t.Fatalf("init %s: %v", cfg.Root, err)
	}
	return res
}

// A worker never makes its root: on an empty path it waits, not ready,
// naming snowflakectl init; once init has made the root (not a new fleet),
// every slot node is reserved to ZooKeeper's time of the make plus the
// bound the root records, and the first ID is above it.
func TestWorkerNeverMakesRoot(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	var log lockedBuffer
	reg := prometheus.NewRegistry()
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	rec := newRecorder()
	w := startWorkerBare(t, "w", cfg, rec, reg, capturingLogger(t, "w", &log))
	waitFor(t, 5*time.Second, "the missing root counted", func() bool {
		return counterValue(t, reg, "snowflake_coordinator_missing_znodes_total", "znode", "root") >= 1
	})
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok, _, _ := obs.Exists(zklayout.DefaultRoot); ok {
			t.Fatal("a worker made its root")
		}
		if w.c.Ready() {
			t.Fatal("a worker serves without a root")
		}
	}
	if !strings.Contains(log.String(), "snowflakectl init") {
		t.Errorf("the log does not name snowflakectl init:\n%s", log.String())
	}

	ic := tree.DefaultInitConfig()
	ic.MaxHorizon, ic.MaxSkew = 2*time.Second, 500*time.Millisecond
	res := initRootT(t, obs, ic)
	_, st, err := obs.Get(zklayout.DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	want := st.Ctime + 2500
	if !res.Made || res.Layout != tree.Layout || res.ReservedUntilMs != want {
		t.Fatalf("init: %+v; want made, layout %s, reserved until ctime+2.5s = %d", res, tree.Layout, want)
	}
	r, ok := readSlot(t, obs, zklayout.DefaultRoot, snowflake.Slot{Datacenter: 30, Machine: 31})
	if !ok || r.ReservedUntilMs != want {
		t.Fatalf("a slot node after init: %+v; want reserved until %d", r, want)
	}
	w.waitReady(15 * time.Second)
	time.Sleep(50 * time.Millisecond)
	if hs := rec.holdings(testSlot); len(hs) != 1 || hs[0].min <= want {
		t.Fatalf("holdings %+v: the first ID must be above the make's time plus the bound (%d)", hs, want)
	}
}

// An ensemble loses its data while a holder, cut off from it, rides the
// outage out on its ceiling. Init makes the root again; a successor on
// the same slot starts above everything the zombie issued. (A worker that
// made the root itself reserved the slot nodes to the make's mtime: the
// successor then issued the zombie's IDs again.)
func TestRootMadeAgainAfterDataLoss(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	rec := newRecorder()
	cfgA := pinned(testConfig(p.Addr()), testSlot)
	cfgA.Horizon = 3 * time.Second
	cfgA.StandbyHorizon = 0
	cfgA.SessionTimeout = 10 * time.Second // the zombie keeps its session view
	a := startWorker(t, "A", cfgA, rec)
	a.waitReady(10 * time.Second)
	time.Sleep(300 * time.Millisecond)
	p.Blackhole()
	obs := observer(t, zs.Addr())
	deleteAll(t, obs, zklayout.DefaultRoot) // the ensemble's data is gone

	ic := tree.DefaultInitConfig()
	ic.MaxHorizon, ic.MaxSkew = 3*time.Second, 500*time.Millisecond
	res := initRootT(t, obs, ic)
	cfgB := pinned(testConfig(zs.Addr()), testSlot)
	b := startWorker(t, "B", cfgB, rec)
	b.waitReady(15 * time.Second)
	// A serves on its ceiling until it passes, then stops.
	waitFor(t, 10*time.Second, "the zombie's ceiling passes", func() bool { return !a.c.Ready() })
	a.Crash()
	time.Sleep(200 * time.Millisecond)
	hs := rec.holdings(testSlot)
	if len(hs) != 2 || hs[1].worker != "B" || hs[1].min <= res.ReservedUntilMs {
		t.Fatalf("holdings %+v; want A then B above %d", hs, res.ReservedUntilMs)
	}
	rec.checkDisjoint(t)
}

// A worker whose horizon or max skew exceeds the root's bound is refused:
// the root made again after a data loss would not cover what it issues.
func TestHorizonAboveRootBoundRefused(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	ic := tree.DefaultInitConfig()
	ic.MaxHorizon, ic.NewFleet = 2*time.Second, true
	initRootT(t, obs, ic)
	cfg := testConfig(zs.Addr())
	cfg.Horizon = 3 * time.Second
	if err, _ := runUntilErr(t, cfg); !errors.Is(err, ErrAboveRootBound) || !strings.Contains(err.Error(), "max_horizon_ms") {
		t.Fatalf("a worker with horizon 3s on a root bound to 2s: %v; want ErrAboveRootBound", err)
	}
	cfg = testConfig(zs.Addr())
	cfg.MaxSkew = 2 * time.Second
	if err, _ := runUntilErr(t, cfg); !errors.Is(err, ErrAboveRootBound) || !strings.Contains(err.Error(), "max_skew_ms") {
		t.Fatalf("a worker with max skew 2s on a root bound to 1s: %v; want ErrAboveRootBound", err)
	}
}

// --new-fleet reserves to the make's time: the first ID comes at once.
func TestInitNewFleet(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	ic := tree.DefaultInitConfig()
	ic.NewFleet = true
	res := initRootT(t, obs, ic)
	_, st, _ := obs.Get(zklayout.DefaultRoot)
	if res.ReservedUntilMs != st.Ctime {
		t.Fatalf("a new fleet reserved until %d, want the make's time %d", res.ReservedUntilMs, st.Ctime)
	}
}

// A v1 root is refused with its own message: no upgrade path.
func TestV1RootRefused(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	acl := zk.WorldACL(zk.PermAll)
	if _, err := obs.Multi(&zk.CreateRequest{Path: "/old", Data: tree.EncodeRoot(tree.NewRootInfo(tree.LayoutV1, time.Now())), Acl: acl},
		&zk.CreateRequest{Path: "/old/leases", Acl: acl}, &zk.CreateRequest{Path: "/old/slots", Acl: acl}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(zs.Addr())
	cfg.Root = "/old"
	err, c := runUntilErr(t, cfg)
	if !errors.Is(err, tree.ErrLayoutMismatch) || !strings.Contains(err.Error(), tree.LayoutV1) || !strings.Contains(err.Error(), "snowflakectl init") {
		t.Fatalf("worker on a v1 root: %v; want ErrLayoutMismatch naming v1 and init", err)
	}
	if c.Status().Claims != 0 {
		t.Fatal("claimed in a v1 root")
	}
	if names, _, _ := obs.Children("/old/slots"); len(names) != 0 {
		t.Fatalf("a worker made %d slot nodes in a v1 root", len(names))
	}
}

// A root init left filling (it died) is never finished by a worker, which
// waits; init run again finishes it, keeping its ranges.
func TestFillingRootFinishedByInit(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	info := tree.NewRootInfo(tree.LayoutFilling, time.Now())
	info.Datacenters = "4"
	acl := zk.WorldACL(zk.PermAll)
	if _, err := obs.Multi(&zk.CreateRequest{Path: "/half", Data: tree.EncodeRoot(info), Acl: acl},
		&zk.CreateRequest{Path: "/half/leases", Acl: acl}, &zk.CreateRequest{Path: "/half/slots", Acl: acl}); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(zs.Addr())
	cfg.Root = "/half"
	w := startWorker(t, "w", cfg, nil)
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if w.c.Ready() {
			t.Fatal("a worker serves from a filling root")
		}
	}
	if names, _, _ := obs.Children("/half/slots"); len(names) != 0 {
		t.Fatalf("a worker made %d slot nodes of a filling root", len(names))
	}
	dcs, _ := tree.ParseDCSet("4")
	res := initRootT(t, obs, initCfg("/half", tree.FleetACL{}, dcs))
	if !res.Made || !res.Finished || res.Layout != tree.LayoutV3 {
		t.Fatalf("init of a filling root: %+v; want finished as v3", res)
	}
	waitFor(t, 15*time.Second, "worker ready", w.c.Ready)
	if sl, _ := snowflake.ParseSlot(w.c.Status().Slot); sl.Datacenter != 4 {
		t.Fatalf("claimed %s in a fleet owning datacenter 4", w.c.Status().Slot)
	}
	data, _, _ := obs.Get("/half")
	if !strings.Contains(string(data), `"layout": "`+tree.LayoutV3+`"`) || !strings.Contains(string(data), `"datacenters": "4"`) {
		t.Fatalf("finished root JSON: %s", data)
	}
	bad := tree.RootInfo{Layout: tree.Layout, EpochMs: snowflake.Epoch, Bits: info.Bits, Datacenters: "1"}
	if err := bad.Compatible(); !errors.Is(err, tree.ErrLayoutMismatch) {
		t.Fatalf("a v2 root naming ranges: %v; want ErrLayoutMismatch", err)
	}
}
