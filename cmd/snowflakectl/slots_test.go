package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// holder is an in-process Coordinator holding a slot: a real lease in a
// real ZooKeeper, which is all the slot map shows of a worker.
type holder struct {
	c      *coordinator.Coordinator
	cancel context.CancelFunc
	done   chan error
}

func startHolder(t *testing.T, zkAddr, root, advertise string) *holder {
	t.Helper()
	cfg := coordinator.DefaultConfig()
	cfg.Servers = []string{zkAddr}
	cfg.Root = root
	cfg.Insecure = true
	cfg.SessionTimeout = 2 * time.Second
	cfg.Renew = 200 * time.Millisecond
	cfg.Horizon = time.Second
	cfg.ReleaseTimeout = 2 * time.Second
	cfg.Advertise, cfg.HTTPAdvertise, cfg.Version = advertise, "127.0.0.1:1", "test"
	fleettest.InitFleet(t, cfg.Servers, cfg.Root, "", tlsfiles.Files{})
	c, err := coordinator.New(cfg, hclog.NewNullLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &holder{c: c, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- c.Run(ctx) }()
	t.Cleanup(h.stop)
	if !fleettest.WaitFor(context.Background(), 15*time.Second, c.Ready) {
		t.Fatalf("holder %s not ready: %+v", advertise, c.Status())
	}
	return h
}

func (h *holder) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	<-h.done
	h.cancel = nil
}

func TestSlotsShowsHoldersAndCounts(t *testing.T) {
	zks := zktest.Start(t)
	root := "/slots-test"
	a := startHolder(t, zks.Addr(), root, "10.0.0.1:7609")
	b := startHolder(t, zks.Addr(), root, "10.0.0.2:7609")
	zkFlag := []string{"--zk", zks.Addr(), "--zk-root", root}

	var out, errb bytes.Buffer
	if rc := runSlots(zkFlag, &out, &errb); rc != exitOK {
		t.Fatalf("slots rc %d, stderr %s", rc, errb.String())
	}
	text := out.String()
	t.Logf("slots:\n%s", text)
	for _, want := range []string{"SLOT", "AHEAD = reserved_until - now", "10.0.0.1:7609", "10.0.0.2:7609",
		a.c.Status().Slot, b.c.Status().Slot, "held 2, free 1022 (of 1024 in datacenters 0-31)"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q", want)
		}
	}

	rep := slotsJSON(t, append(zkFlag, "--json"))
	if rep.Held != 2 || rep.Free != 1022 || len(rep.Slots) != 2 {
		t.Fatalf("json: held %d free %d slots %d; want 2, 1022, 2", rep.Held, rep.Free, len(rep.Slots))
	}
	addrs := map[string]string{}
	for _, s := range rep.Slots {
		addrs[s.Slot] = s.Addr
		if !s.Held || s.ReservedUntilMs <= rep.NowMs-5000 || s.AheadMs == nil || s.Since == nil || s.LeaseNode == "" {
			t.Errorf("json slot %+v: want held, a reservation near now, since and lease node", s)
		}
	}
	if addrs[a.c.Status().Slot] != "10.0.0.1:7609" || addrs[b.c.Status().Slot] != "10.0.0.2:7609" {
		t.Errorf("json addresses by slot %v, want %s=10.0.0.1:7609 and %s=10.0.0.2:7609",
			addrs, a.c.Status().Slot, b.c.Status().Slot)
	}

	// A released slot is free, and listed only with --all.
	released := a.c.Status().Slot
	a.stop()
	rep = slotsJSON(t, append(zkFlag, "--json"))
	if rep.Held != 1 || rep.Free != 1023 || rep.Used != 2 || len(rep.Slots) != 1 {
		t.Fatalf("after release: held %d free %d used %d rows %d; want 1, 1023, 2, 1", rep.Held, rep.Free, rep.Used, len(rep.Slots))
	}
	rep = slotsJSON(t, append(zkFlag, "--json", "--all"))
	if len(rep.Slots) != 2 {
		t.Fatalf("--all rows %d, want 2", len(rep.Slots))
	}
	for _, s := range rep.Slots {
		if s.Slot == released && (s.Held || s.Addr != "" || s.ReservedUntilMs == 0) {
			t.Errorf("released slot with --all: %+v; want not held, no address, its reservation", s)
		}
	}
	out.Reset()
	if rc := runSlots(append(zkFlag, "--all"), &out, &errb); rc != exitOK || !strings.Contains(out.String(), "(free)") {
		t.Errorf("--all table rc %d lacks the free slot:\n%s", rc, out.String())
	}

	// A slot node overwritten by hand: the map still reads, and names it.
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Set(zklayout.SlotPath(root, mustSlot(t, released)), []byte("not a record"), -1); err != nil {
		t.Fatal(err)
	}
	rep = slotsJSON(t, append(zkFlag, "--json"))
	if rep.Held != 1 || len(rep.Damaged) != 1 || !strings.Contains(rep.Damaged[released], "decode slot node") {
		t.Fatalf("with %s overwritten: held %d, damaged %v; want 1 held and %s damaged", released, rep.Held, rep.Damaged, released)
	}
	out.Reset()
	if rc := runSlots(zkFlag, &out, &errb); rc != exitOK || !strings.Contains(out.String(), "1 damaged slot nodes") || !strings.Contains(out.String(), "  "+released+": decode slot node") {
		t.Errorf("table rc %d does not name the damaged slot %s:\n%s", rc, released, out.String())
	}
}

func mustSlot(t *testing.T, s string) snowflake.Slot {
	t.Helper()
	sl, err := snowflake.ParseSlot(s)
	if err != nil {
		t.Fatal(err)
	}
	return sl
}

func slotsJSON(t *testing.T, args []string) tree.SlotMapView {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := runSlots(args, &out, &errb); rc != exitOK {
		t.Fatalf("slots %v rc %d, stderr %s", args, rc, errb.String())
	}
	var rep tree.SlotMapView
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("slots --json output is not JSON: %v\n%s", err, out.String())
	}
	return rep
}

func TestSlotsEmptyRoot(t *testing.T) {
	zks := zktest.Start(t)
	rep := slotsJSON(t, []string{"--zk", zks.Addr(), "--zk-root", "/nothing-here", "--json"})
	if rep.Held != 0 || rep.Free != 1024 || rep.Slots == nil {
		t.Fatalf("empty root: %+v; want held 0, free 1024, slots []", rep)
	}
}

func TestSlotsUnreachableZooKeeper(t *testing.T) {
	var out, errb bytes.Buffer
	addr := zktest.FreeAddr(t) // nothing listens there
	if rc := runSlots([]string{"--zk", addr, "--timeout", "1s"}, &out, &errb); rc != exitFailure {
		t.Fatalf("rc %d, want %d; stderr %s", rc, exitFailure, errb.String())
	}
	if !strings.Contains(errb.String(), "slot map") {
		t.Errorf("stderr %q does not say what failed", errb.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		run  func([]string, *bytes.Buffer, *bytes.Buffer) int
		args []string
		want string // the flag named on stderr
	}{
		{slotsRun, []string{"--bogus"}, "-bogus"},
		{slotsRun, []string{"--zk", ""}, "--zk"},
		{slotsRun, []string{"--zk", "nohostport"}, "--zk"},
		{slotsRun, []string{"--zk-root", "relative"}, "--zk-root"},
		{slotsRun, []string{"--timeout", "0s"}, "--timeout"},
		{slotsRun, []string{"extra"}, "extra"},
		{nextRun, []string{"-n", "0"}, "-n"},
		{nextRun, []string{"-n", "4097"}, "-n"},
		{nextRun, []string{"-n", "x"}, "-n"},
		{nextRun, []string{"--addr", "nohostport"}, "--addr"},
		{nextRun, []string{"--addr", "127.0.0.1:1", "--zk", "127.0.0.1:2"}, "--addr or --zk"},
		{nextRun, []string{"--timeout", "-1s"}, "--timeout"},
		{benchRun, []string{"-c", "0"}, "-c"},
		{benchRun, []string{"-P", "0"}, "-P"},
		{benchRun, []string{"-n", "5000"}, "-n"},
		{benchRun, []string{"-d", "0s"}, "-d"},
		{benchRun, []string{"--addr", ","}, "--addr"},
	} {
		var out, errb bytes.Buffer
		rc := tc.run(tc.args, &out, &errb)
		line := strings.TrimSpace(errb.String())
		if rc != exitUsage || !strings.Contains(line, tc.want) || strings.Count(line, "\n") != 0 {
			t.Errorf("%v: rc %d stderr %q; want %d and one line naming %q", tc.args, rc, line, exitUsage, tc.want)
		}
	}
	for _, r := range []func([]string, *bytes.Buffer, *bytes.Buffer) int{slotsRun, nextRun, benchRun} {
		var out, errb bytes.Buffer
		if rc := r([]string{"-h"}, &out, &errb); rc != exitOK || !strings.Contains(out.String(), "usage: snowflakectl") {
			t.Errorf("-h: rc %d, stdout %q", rc, out.String())
		}
	}
}

func slotsRun(a []string, o, e *bytes.Buffer) int { return runSlots(a, o, e) }
func nextRun(a []string, o, e *bytes.Buffer) int  { return runNext(a, o, e) }
func benchRun(a []string, o, e *bytes.Buffer) int { return runBench(a, o, e) }

// A standby's node in standby/ (made here as a standby makes it) is listed
// under the table and in --json.
func TestSlotsShowsStandbys(t *testing.T) {
	zks := zktest.Start(t)
	root := "/slots-standby"
	startHolder(t, zks.Addr(), root, "10.0.0.1:7609")
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	zkFlag := []string{"--zk", zks.Addr(), "--zk-root", root}
	if rep := slotsJSON(t, append(zkFlag, "--json")); len(rep.Standbys) != 0 {
		t.Fatalf("standbys %+v before any", rep.Standbys)
	}
	// init made standby/.
	data := []byte(`{"addr":"10.0.0.9:7609","host":"sb1","pid":42,"version":"test","since":"2026-12-03T10:00:00Z"}`)
	if _, err := conn.Create(tree.StandbyPath(root)+"/_c_0123456789abcdef0123456789abcdef-dc05-s00000000000000ab", data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	rep := slotsJSON(t, append(zkFlag, "--json"))
	if len(rep.Standbys) != 1 || rep.Standbys[0].Datacenter != 5 || rep.Standbys[0].Addr != "10.0.0.9:7609" || rep.Standbys[0].PID != 42 {
		t.Fatalf("json standbys %+v, want the dc05 standby at 10.0.0.9:7609 pid 42", rep.Standbys)
	}
	var out, errb bytes.Buffer
	if rc := runSlots(zkFlag, &out, &errb); rc != exitOK {
		t.Fatalf("slots rc %d, stderr %s", rc, errb.String())
	}
	t.Logf("slots:\n%s", out.String())
	for _, want := range []string{"1 standby waiting", "_c_0123456789abcdef0123456789abcdef-dc05-s00000000000000ab", "datacenter 5", "10.0.0.9:7609", "sb1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}
