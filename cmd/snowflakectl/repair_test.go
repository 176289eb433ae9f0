package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// A slot node deleted by hand is re-created only with a confirmation: not
// without a terminal and without --yes, not when the person answers no;
// with yes (or --yes) it is made with the reservation asked for, and a
// node that exists is left as it is.
func TestRepairRecreatesMissingSlotAfterConfirmation(t *testing.T) {
	zks := zktest.Start(t)
	root := "/repair-test"
	startHolder(t, zks.Addr(), root, "10.0.0.1:7609") // makes the root and every slot node
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	slot := snowflake.Slot{Datacenter: 3, Machine: 4}
	sp := zklayout.SlotPath(root, slot)
	if err := conn.Delete(sp, -1); err != nil {
		t.Fatal(err)
	}
	until := time.Now().Add(time.Minute).UnixMilli()
	args := []string{"--zk", zks.Addr(), "--zk-root", root, "--slot", "dc03-m04", "--reserve-until", itoa64(until)}
	exists := func() bool { ok, _, err := conn.Exists(sp); return err == nil && ok }

	var out, errb bytes.Buffer
	if rc := runRepair(args, input{r: strings.NewReader("y\n")}, &out, &errb); rc != exitUsage ||
		!strings.Contains(errb.String(), "--yes") || exists() {
		t.Fatalf("without a terminal and --yes: rc %d, stderr %q, node made %v; want a refusal naming --yes", rc, errb.String(), exists())
	}
	out.Reset()
	errb.Reset()
	if rc := runRepair(args, input{r: strings.NewReader("n\n"), terminal: true}, &out, &errb); rc != exitFailure || exists() {
		t.Fatalf("answered no: rc %d, node made %v; stderr %q", rc, exists(), errb.String())
	}
	if !strings.Contains(out.String(), "[y/N]") || !strings.Contains(out.String(), "dc03-m04") {
		t.Errorf("prompt %q does not say what it will do", out.String())
	}
	out.Reset()
	errb.Reset()
	if rc := runRepair(args, input{r: strings.NewReader("yes\n"), terminal: true}, &out, &errb); rc != exitOK {
		t.Fatalf("answered yes: rc %d, stderr %q", rc, errb.String())
	}
	data, st, err := conn.Get(sp)
	if err != nil {
		t.Fatalf("slot node not made: %v", err)
	}
	var rec struct {
		ReservedUntilMs int64 `json:"reserved_until_ms"`
	}
	if err := json.Unmarshal(data, &rec); err != nil || rec.ReservedUntilMs != until {
		t.Fatalf("made node %s, want reserved_until_ms %d", data, until)
	}
	t.Logf("answered yes:\n%s", out.String())
	if !strings.Contains(out.String(), "made dc03-m04") {
		t.Errorf("output %q does not name the node made", out.String())
	}
	// Again, with --yes: the node exists now and is not written.
	out.Reset()
	errb.Reset()
	if rc := runRepair(append(args[:len(args):len(args)], "--yes"), input{}, &out, &errb); rc != exitOK {
		t.Fatalf("--yes on an existing node: rc %d, stderr %q", rc, errb.String())
	}
	if _, st2, _ := conn.Get(sp); st2.Version != st.Version || st2.Mzxid != st.Mzxid {
		t.Fatal("repair wrote a slot node that exists")
	}
	if !strings.Contains(out.String(), "dc03-m04 exists; left as it is") || strings.Contains(out.String(), "will make") {
		t.Errorf("output %q: want only what was done (the node left), not what repair would do", out.String())
	}
	// A repair that fails says nothing on stdout (#42 item 2): here a root
	// that is not there, without the bound a root made again needs.
	out.Reset()
	errb.Reset()
	bad := []string{"--zk", zks.Addr(), "--zk-root", "/nowhere", "--slot", "dc03-m04", "--yes"}
	if rc := runRepair(bad, input{}, &out, &errb); rc == exitOK || out.Len() != 0 {
		t.Errorf("failed repair: rc %d, stdout %q (want empty), stderr %q", rc, out.String(), errb.String())
	}
}

// slots/ deleted whole: repair --slot all makes it and every slot node.
func TestRepairAllAfterSlotsDeleted(t *testing.T) {
	zks := zktest.Start(t)
	root := "/repair-all"
	h := startHolder(t, zks.Addr(), root, "10.0.0.1:7609")
	h.stop()
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	names, _, _ := conn.Children(zklayout.SlotsPath(root))
	for _, n := range names {
		if err := conn.Delete(zklayout.SlotsPath(root)+"/"+n, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Delete(zklayout.SlotsPath(root), -1); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	// now+5s, the old examples' horizon, is below what a holder of the
	// default 40 s horizon may have issued: refused unless stated.
	rc := runRepair([]string{"--zk", zks.Addr(), "--zk-root", root, "--slot", "all", "--reserve-until", "now+5s", "--yes"},
		input{}, &out, &errb)
	if rc != exitFailure || !strings.Contains(errb.String(), "--unsafe-low-reservation") || !strings.Contains(errb.String(), "max horizon 40s") {
		t.Fatalf("--reserve-until now+5s: rc %d, stderr %q; want a refusal naming the bound and the flag", rc, errb.String())
	}
	if ok, _, _ := conn.Exists(zklayout.SlotsPath(root)); ok {
		t.Fatal("a refused repair made slots/")
	}
	out.Reset()
	errb.Reset()
	before := time.Now().Add(41 * time.Second).UnixMilli()
	rc = runRepair([]string{"--zk", zks.Addr(), "--zk-root", root, "--slot", "all", "--yes"}, input{}, &out, &errb)
	if rc != exitOK {
		t.Fatalf("rc %d, stderr %q", rc, errb.String())
	}
	data, _, err := conn.Get(zklayout.SlotPath(root, snowflake.Slot{Datacenter: 9, Machine: 9}))
	var rec struct {
		ReservedUntilMs int64 `json:"reserved_until_ms"`
	}
	if err != nil || json.Unmarshal(data, &rec) != nil || rec.ReservedUntilMs < before {
		t.Fatalf("repair without --reserve-until made %s (%v); want a reservation of at least now+41s (%d)", data, err, before)
	}
	names, _, err = conn.Children(zklayout.SlotsPath(root))
	if err != nil || len(names) != snowflake.Slots {
		t.Fatalf("after repair: %d slot nodes (%v), want %d", len(names), err, snowflake.Slots)
	}
	if !strings.Contains(out.String(), "made "+zklayout.SlotsPath(root)) {
		t.Errorf("output does not name slots/ as made:\n%s", out.String())
	}
	if _, err := conn.Create(zklayout.SlotsPath(root), nil, 0, zk.WorldACL(zk.PermAll)); err != zk.ErrNodeExists {
		t.Errorf("slots/ after repair: %v", err)
	}
}

func TestRepairUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--reserve-until", "now"}, "--slot"},
		{[]string{"--slot", "dc32-m00", "--reserve-until", "now"}, "--slot"},
		{[]string{"--slot", "dc03-m04", "--reserve-until", "soon"}, "--reserve-until"},
		{[]string{"--slot", "dc03-m04", "--reserve-until", "now-5s"}, "--reserve-until"},
		{[]string{"--slot", "dc03-m04", "--reserve-until", "12"}, "--reserve-until"},
		{[]string{"--slot", "all", "--reserve-until", "now", "--zk", "nohostport"}, "--zk"},
	} {
		var out, errb bytes.Buffer
		rc := runRepair(tc.args, input{}, &out, &errb)
		line := strings.TrimSpace(errb.String())
		if rc != exitUsage || !strings.Contains(line, tc.want) || strings.Contains(line, "\n") {
			t.Errorf("%v: rc %d stderr %q; want %d and one line naming %q", tc.args, rc, line, exitUsage, tc.want)
		}
	}
	now := time.UnixMilli(1_796_277_989_131)
	for in, want := range map[string]int64{"now": now.UnixMilli(), "now+10s": now.UnixMilli() + 10_000, "1796277989999": 1796277989999} {
		if got, err := parseReserveUntil(in, now); err != nil || got != want {
			t.Errorf("parseReserveUntil(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

// A deleted root is made again only with the datacenters it owned, and
// only where no other fleet of the ensemble owns one of them.
func TestRepairDeletedRootKeepsScope(t *testing.T) {
	zks, conn := initFleetFor(t, "/other", "--datacenters", "5")
	var out, errb bytes.Buffer
	args := []string{"--zk", zks.Addr(), "--zk-root", "/gone", "--slot", "all", "--yes"}
	errb.Reset()
	if rc := runRepair(args, input{}, &out, &errb); rc != exitFailure || !strings.Contains(errb.String(), "--datacenters") {
		t.Fatalf("repair of a deleted root without --datacenters: rc %d, %q; want a refusal naming --datacenters", rc, errb.String())
	}
	errb.Reset()
	// Nor without the bound it recorded (#37 item 3): the default (40 s +
	// 1 s) reserved the slots below what a holder of a fleet made with
	// init --max-horizon 60s may have reserved.
	if rc := runRepair(append(args, "--datacenters", "0-3"), input{}, &out, &errb); rc != exitFailure ||
		!strings.Contains(errb.String(), "--max-horizon") || !strings.Contains(errb.String(), "--max-skew") {
		t.Fatalf("repair of a deleted root without its bound: rc %d, %q; want a refusal naming --max-horizon and --max-skew", rc, errb.String())
	}
	args = append(args, "--max-horizon", "60s", "--max-skew", "2s")
	errb.Reset()
	if rc := runRepair(append(args, "--datacenters", "all"), input{}, &out, &errb); rc != exitFailure || !strings.Contains(errb.String(), "/other") {
		t.Fatalf("repair of a root owning all 32 beside /other: rc %d, %q; want an overlap naming /other", rc, errb.String())
	}
	if ok, _, _ := conn.Exists("/gone"); ok {
		t.Fatal("a refused repair made the root")
	}
	errb.Reset()
	out.Reset()
	made := time.Now()
	if rc := runRepair(append(args, "--datacenters", "0-3"), input{}, &out, &errb); rc != exitOK || !strings.Contains(out.String(), "max horizon 1m0s, max skew 2s") {
		t.Fatalf("repair --datacenters 0-3: rc %d, %q, %q; want it made, saying the bound it recorded", rc, out.String(), errb.String())
	}
	data, _, err := conn.Get("/gone")
	if err != nil {
		t.Fatal(err)
	}
	info, err := tree.DecodeRoot("/gone", data)
	if err != nil || info.MaxHorizon() != time.Minute || info.MaxSkew() != 2*time.Second {
		t.Fatalf("the repaired root records %v, %v (%v); want 1m0s and 2s", info.MaxHorizon(), info.MaxSkew(), err)
	}
	m, err := tree.ReadSlotMap(conn, "/gone")
	if err != nil || m.Owned.String() != "0-3" || len(m.Slots) != snowflake.Slots {
		t.Fatalf("the repaired root owns %s with %d slot nodes (%v); want 0-3 and 1024", m.Owned, len(m.Slots), err)
	}
	if least := made.Add(62 * time.Second).UnixMilli(); m.Slots[snowflake.SlotAt(0)].ReservedUntilMs < least {
		t.Fatalf("the repaired slots are reserved until %d; want at least now + 60s + 2s (%d)", m.Slots[snowflake.SlotAt(0)].ReservedUntilMs, least)
	}
}

// recover asks first, then raises every slot node of a root past now plus
// the root's bound, keeping its datacenters.
func TestRecoverCommand(t *testing.T) {
	zks := zktest.Start(t)
	var out, errb bytes.Buffer
	if rc := runInit([]string{"--zk", zks.Addr(), "--zk-root", "/r", "--datacenters", "2-3", "--new-fleet"}, &out, &errb); rc != exitOK {
		t.Fatalf("init: %s", errb.String())
	}
	args := []string{"--zk", zks.Addr(), "--zk-root", "/r"}
	if rc := runRecover(args, input{r: strings.NewReader("y\n")}, &out, &errb); rc != exitUsage || !strings.Contains(errb.String(), "--yes") {
		t.Fatalf("recover without a terminal and --yes: rc %d, %q", rc, errb.String())
	}
	if rc := runRecover(args, input{r: strings.NewReader("n\n"), terminal: true}, &out, &errb); rc != exitFailure {
		t.Fatalf("recover answered no: rc %d", rc)
	}
	out.Reset()
	before := time.Now().Add(41 * time.Second).UnixMilli()
	if rc := runRecover(append(args, "--yes"), input{}, &out, &errb); rc != exitOK {
		t.Fatalf("recover --yes: rc %d, %q", rc, errb.String())
	}
	if !strings.Contains(out.String(), "1024 slot nodes raised") || !strings.Contains(out.String(), "datacenters 2-3 kept") {
		t.Errorf("recover said: %s", out.String())
	}
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	m, err := tree.ReadSlotMap(conn, "/r")
	if err != nil || m.Owned.String() != "2-3" {
		t.Fatalf("slot map after recover: owns %s, %v", m.Owned, err)
	}
	for s, r := range m.Slots {
		if r.ReservedUntilMs < before {
			t.Fatalf("slot %s reserved until %d after recover, want at least now+41s (%d)", s, r.ReservedUntilMs, before)
		}
	}
}

// The bound survives the root (#37 item 3): a fleet made with init
// --max-horizon 60s --max-skew 2s loses its root; repair without
// --datacenters or a bound takes both from the fleet's registry entry and
// reserves the slots past now + 62 s, each slot record carrying the bound;
// a bound given below the registered one is refused (the default 40 s + 1 s
// reserved the slots below what a holder riding its ceiling may issue:
// 1,731 duplicates in the review's run).
func TestRepairTakesTheBoundFromTheRegistry(t *testing.T) {
	zks, conn := initFleetFor(t, "/kept", "--datacenters", "6", "--max-horizon", "60s", "--max-skew", "2s")
	var out, errb bytes.Buffer
	var del func(p string)
	del = func(p string) {
		kids, _, _ := conn.Children(p)
		for _, k := range kids {
			del(p + "/" + k)
		}
		if err := conn.Delete(p, -1); err != nil {
			t.Fatalf("delete %s: %v", p, err)
		}
	}
	del("/kept")
	args := []string{"--zk", zks.Addr(), "--zk-root", "/kept", "--slot", "all", "--yes"}
	errb.Reset()
	if rc := runRepair(append(args, "--max-horizon", "40s", "--max-skew", "1s"), input{}, &out, &errb); rc != exitFailure ||
		!strings.Contains(errb.String(), "recorded the bound max horizon 1m0s, max skew 2s (its registry entry)") {
		t.Fatalf("repair with a bound below the registered one: rc %d, %q; want a refusal naming the registered bound", rc, errb.String())
	}
	out.Reset()
	errb.Reset()
	made := time.Now()
	if rc := runRepair(args, input{}, &out, &errb); rc != exitOK || !strings.Contains(out.String(), "max horizon 1m0s, max skew 2s") {
		t.Fatalf("repair of the lost root: rc %d, %q, %q; want it made with the registered bound", rc, out.String(), errb.String())
	}
	m, err := tree.ReadSlotMap(conn, "/kept")
	if err != nil || m.Owned.String() != "6" {
		t.Fatalf("the repaired root owns %s (%v); want 6, from the registry", m.Owned, err)
	}
	rec := m.Slots[snowflake.SlotAt(0)]
	if least := made.Add(62 * time.Second).UnixMilli(); rec.ReservedUntilMs < least || rec.BoundMs != 62_000 {
		t.Fatalf("the repaired slots: reserved until %d, bound %d ms; want at least %d (now + 60s + 2s) and 62000", rec.ReservedUntilMs, rec.BoundMs, least)
	}
}

// A reservation nobody could have written (#37 item 5): a slot node set to
// reserve its slot until 2080 is shown damaged (the slot map, hence slots
// and /slots), and repair --reset rewrites it to now + the root's bound,
// after the question, while a valid node named with it is left alone;
// repair without --reset writes neither.
func TestRepairResetsAForgedReservation(t *testing.T) {
	zks, conn := initFleetFor(t, "/forged", "--datacenters", "1")
	var out, errb bytes.Buffer
	forged, valid := snowflake.Slot{Datacenter: 1, Machine: 2}, snowflake.Slot{Datacenter: 1, Machine: 3}
	p := zklayout.SlotPath("/forged", forged)
	if _, err := conn.Set(p, tree.EncodeSlot(tree.SlotRecord{ReservedUntilMs: snowflake.MaxUnixMs, UpdatedMs: time.Now().UnixMilli()}), -1); err != nil {
		t.Fatal(err)
	}
	m, err := tree.ReadSlotMap(conn, "/forged")
	if err != nil || !strings.Contains(m.Damaged[forged], "no holder wrote it") || !strings.Contains(m.Damaged[forged], "--reset") {
		t.Fatalf("slot map: damaged %q (%v); want %s shown forged, naming repair --reset", m.Damaged[forged], err, forged)
	}
	validBefore := m.Slots[valid]
	args := []string{"--zk", zks.Addr(), "--zk-root", "/forged", "--slot", forged.String() + "," + valid.String()}
	out.Reset()
	if rc := runRepair(append(args, "--yes"), input{}, &out, &errb); rc != exitOK || strings.Contains(out.String(), "reset") {
		t.Fatalf("repair without --reset: rc %d, %q; want both left", rc, out.String())
	}
	if rc := runRepair(append(args, "--reset"), input{r: strings.NewReader("n\n"), terminal: true}, &out, &errb); rc != exitFailure {
		t.Fatalf("repair --reset answered no: rc %d", rc)
	}
	out.Reset()
	made := time.Now()
	if rc := runRepair(append(args, "--reset", "--yes"), input{}, &out, &errb); rc != exitOK ||
		!strings.Contains(out.String(), "reset damaged "+forged.String()) || !strings.Contains(out.String(), valid.String()+" exists; left as it is") {
		t.Fatalf("repair --reset: rc %d, %q, %q; want %s reset and %s left", rc, out.String(), errb.String(), forged, valid)
	}
	m, err = tree.ReadSlotMap(conn, "/forged")
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := m.Slots[forged]
	if _, bad := m.Damaged[forged]; bad || !ok || rec.ReservedUntilMs < made.Add(41*time.Second).UnixMilli() || rec.ReservedUntilMs > time.Now().Add(50*time.Second).UnixMilli() {
		t.Fatalf("after the reset: %+v (damaged %v); want a valid record reserved now + 41 s", rec, m.Damaged[forged])
	}
	if m.Slots[valid].Version != validBefore.Version {
		t.Fatalf("the valid node %s was written (version %d, was %d)", valid, m.Slots[valid].Version, validBefore.Version)
	}
}

// initFleetFor starts a ZooKeeper, makes root there with snowflakectl init
// --new-fleet and args, and returns the server and a session on it.
func initFleetFor(t *testing.T, root string, args ...string) (*zktest.Server, *zk.Conn) {
	t.Helper()
	zks := zktest.Start(t)
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	var out, errb bytes.Buffer
	if rc := runInit(append([]string{"--zk", zks.Addr(), "--zk-root", root, "--new-fleet"}, args...), &out, &errb); rc != exitOK {
		t.Fatalf("init %s: %s", root, errb.String())
	}
	return zks, conn
}
