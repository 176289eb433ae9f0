package coordinator

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

func TestParseDCSet(t *testing.T) {
	for in, want := range map[string]string{
		"0-3,8": "0-3,8", "8, 0-3": "0-3,8", "31": "31", "0-31": "0-31",
		"0,1,2,5-6": "0-2,5-6", " 7 ": "7",
	} {
		got, err := tree.ParseDCSet(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseDCSet(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if s, _ := tree.ParseDCSet("0-31"); s != tree.AllDatacenters || s.Slots() != snowflake.Slots {
		t.Errorf("0-31 = %b (%d slots), want every datacenter", s, s.Slots())
	}
	for _, in := range []string{"", "5-2", "40", "-1", "0-32", "1,,2", "a", "1-", "0-3,2", "03"} {
		if s, err := tree.ParseDCSet(in); !errors.Is(err, tree.ErrBadRanges) || !strings.Contains(err.Error(), "") {
			t.Errorf("ParseDCSet(%q) = %v, %v; want ErrBadRanges", in, s, err)
		}
	}
}

// runUntilErr runs a coordinator on cfg and returns Run's error, which must
// come within 15 s: a worker refusing its scope never serves.
func runUntilErr(t *testing.T, cfg Config) (error, *Coordinator) {
	t.Helper()
	c, err := New(cfg, testLogger(t, "w"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = c.Run(ctx)
	if ctx.Err() != nil {
		t.Fatalf("Run did not refuse within 15s (status %+v)", c.Status())
	}
	return err, c
}

// TestFleetScope: init makes ranged roots and refuses an overlapping one
// wherever it would sit; workers claim only inside their root's ranges,
// refuse a pinned datacenter outside them, refuse a root another fleet
// overlaps, and do not make an all-32 root beside another fleet.
func TestFleetScope(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	ctx := context.Background()
	acl := zk.WorldACL(zk.PermAll)
	mustDC := func(s string) tree.DCSet {
		d, err := tree.ParseDCSet(s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	res, err := tree.InitRoot(ctx, obs, initCfg("/region/eu", tree.FleetACL{}, mustDC("0-1")))
	if err != nil || !res.Made || res.Layout != tree.LayoutV3 {
		t.Fatalf("init /region/eu 0-1: %+v, %v; want made, layout v3", res, err)
	}
	if m, err := tree.ReadSlotMap(obs, "/region/eu"); err != nil || len(m.Slots) != snowflake.Slots || m.Free() != 64 {
		t.Fatalf("slot map of /region/eu: %d slot nodes, free %d, %v; want 1024 nodes, 64 free", len(m.Slots), m.Free(), err)
	}
	// Again with the same ranges: nothing done; with others: refused.
	if res, err := tree.InitRoot(ctx, obs, initCfg("/region/eu", tree.FleetACL{}, mustDC("0-1"))); err != nil || res.Made {
		t.Fatalf("init again: %+v, %v; want left alone", res, err)
	}
	if _, err := tree.InitRoot(ctx, obs, initCfg("/region/eu", tree.FleetACL{}, mustDC("0-2"))); !errors.Is(err, tree.ErrRootExists) {
		t.Fatalf("init with other ranges: %v; want ErrRootExists", err)
	}
	// A second fleet: disjoint is fine, deep in the tree too; overlapping
	// is refused and nothing is made.
	if _, err := tree.InitRoot(ctx, obs, initCfg("/apps/x/us", tree.FleetACL{}, mustDC("2-3,8"))); err != nil {
		t.Fatalf("init /apps/x/us 2-3,8: %v", err)
	}
	_, err = tree.InitRoot(ctx, obs, initCfg("/other", tree.FleetACL{}, mustDC("8-9")))
	if !errors.Is(err, tree.ErrFleetOverlap) || !strings.Contains(err.Error(), "/apps/x/us") || !strings.Contains(err.Error(), "both: 8") {
		t.Fatalf("init /other 8-9: %v; want ErrFleetOverlap naming /apps/x/us and datacenter 8", err)
	}
	if ok, _, _ := obs.Exists("/other"); ok {
		t.Fatal("a refused init made its root")
	}
	reg, err := tree.ReadRegistry(obs, true)
	if err != nil || len(reg.Fleets) != 2 || reg.Fleets[0].Root != "/apps/x/us" || reg.Fleets[1].Root != "/region/eu" || reg.Nodes != 3 {
		t.Fatalf("registry: %+v, %v; want the two fleets, in 3 reads (a list and one each)", reg, err)
	}

	// Workers of /region/eu claim only in datacenters 0-1: 64 slots, so
	// the 65th stands by.
	cfg := testConfig(zs.Addr())
	cfg.Root = "/region/eu"
	for i := range 8 {
		w := startWorker(t, "eu", cfg, nil)
		waitFor(t, 10*time.Second, "worker ready", w.c.Ready)
		if sl, _ := snowflake.ParseSlot(w.c.Status().Slot); sl.Datacenter > 1 {
			t.Fatalf("worker %d of a fleet owning 0-1 claimed %s", i, w.c.Status().Slot)
		}
	}
	// Pinned outside the range: refused, naming both.
	pinned := cfg
	pinned.Datacenter = 5
	err, _ = runUntilErr(t, pinned)
	if !errors.Is(err, tree.ErrOutsideFleet) || !strings.Contains(err.Error(), "5") || !strings.Contains(err.Error(), "0-1") {
		t.Fatalf("worker pinned to 5 in a 0-1 fleet: %v; want ErrOutsideFleet naming 5 and 0-1", err)
	}
	// A root made by hand, not registered: it counts for nothing, and its
	// own workers refuse to serve (ErrNotRegistered, naming init).
	raw := tree.NewRootInfo(tree.LayoutV3, time.Now())
	raw.Datacenters = "1"
	if _, err := obs.Create("/rogue", tree.EncodeRoot(raw), 0, acl); err != nil {
		t.Fatal(err)
	}
	rogue := cfg
	rogue.Root = "/rogue"
	if err, _ := runUntilErr(t, rogue); !errors.Is(err, tree.ErrNotRegistered) || !strings.Contains(err.Error(), "snowflakectl init --zk-root /rogue") {
		t.Fatalf("worker of an unregistered /rogue: %v; want ErrNotRegistered naming init", err)
	}
	w := startWorker(t, "eu-beside-rogue", cfg, nil)
	waitFor(t, 10*time.Second, "a worker of /region/eu serves beside an unregistered root", w.c.Ready)
	w.Stop()
	// Registered (two inits racing, an operator's mistake) overlapping
	// ours: new workers of both refuse to start.
	if err := tree.Register(obs, tree.FleetACL{}, "/rogue", raw); err != nil {
		t.Fatal(err)
	}
	err, c := runUntilErr(t, cfg)
	if !errors.Is(err, tree.ErrFleetOverlap) || !strings.Contains(err.Error(), "/rogue") || c.Status().Claims != 0 {
		t.Fatalf("worker of a fleet overlapped by /rogue: %v (claims %d); want ErrFleetOverlap, nothing claimed", err, c.Status().Claims)
	}
	if err, _ := runUntilErr(t, rogue); !errors.Is(err, tree.ErrFleetOverlap) {
		t.Fatalf("worker of /rogue: %v; want ErrFleetOverlap", err)
	}
}

// initCfg is a new fleet's init of root owning owned.
func initCfg(root string, acl tree.FleetACL, owned tree.DCSet) tree.InitConfig {
	c := tree.DefaultInitConfig()
	c.Root, c.ACL, c.Owned, c.NewFleet = root, acl, owned, true
	return c
}

// Fleets are registered, not searched for (#36 item 1): subtrees closed
// to everybody but their maker, one holding a root that would overlap
// ours, neither stop a worker's start nor init; the deprecated ScanSkip is
// still validated (a config naming it starts, with a warning).
func TestUnreadableSubtreesDoNotMatter(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	ctx := context.Background()
	if _, err := tree.InitRoot(ctx, obs, initCfg("/ours", tree.FleetACL{}, tree.DCSet(3))); err != nil {
		t.Fatal(err)
	}
	other, err := zkconn.Dial([]string{zs.Addr()}, "someone-else:secret", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	closed := zk.DigestACL(zk.PermAll, "someone-else", "secret")
	for _, p := range []string{"/locked", "/private"} {
		if _, err := other.Create(p, nil, 0, closed); err != nil {
			t.Fatal(err)
		}
	}
	hidden := tree.NewRootInfo(tree.LayoutV3, time.Now())
	hidden.Datacenters = "0-3"
	if _, err := other.Create("/locked/eu", tree.EncodeRoot(hidden), 0, tree.ACL("someone-else:secret")); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(zs.Addr())
	cfg.Root = "/ours"
	cfg.ScanSkip = []string{"/locked"}
	lb := &logBuffer{t: t}
	w := startWorkerLogged(t, "w", cfg, nil, nil, lb.logger("w"))
	w.waitReady(10 * time.Second)
	if lb.count("--zk-scan-skip and --zk-scan-limit are ignored") == 0 {
		t.Error("a worker given ScanSkip did not say it is ignored")
	}
	if res, err := tree.InitRoot(ctx, obs, initCfg("/batch", tree.FleetACL{}, tree.DCSet(1)<<9)); err != nil || !res.Made || len(res.Scan.Fleets) != 1 {
		t.Fatalf("init beside unreadable subtrees: %+v, %v; want made, /ours the one other fleet", res, err)
	}

	bad := testConfig(zs.Addr())
	for _, p := range []string{"locked", "/", "/locked/", "/a/../b", ""} {
		bad.ScanSkip = []string{p}
		var ce *configerr.Error
		if err := bad.Validate(); !errors.As(err, &ce) || ce.Field != "ScanSkip" || ce.Value != p {
			t.Errorf("ScanSkip %q: Validate %v; want a ConfigError naming ScanSkip and the value", p, err)
		}
	}
}
