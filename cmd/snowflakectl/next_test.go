package main

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// TestMain removes the snowflaked binary fleettest builds for these tests.
// TestMain: init runs with --zk-insecure unless a test says otherwise (most
// are not about credentials).
func TestMain(m *testing.M) {
	os.Setenv("SNOWFLAKE_ZK_INSECURE", "true")
	os.Exit(fleettest.Main(m))
}

const fleetRoot = "/ctl-test"

func startWorkers(t *testing.T, n int) (*zktest.Server, []*fleettest.Worker) {
	return fleettest.StartFleet(t, fleetRoot, n)
}

func parseIDs(t *testing.T, out string) []int64 {
	t.Helper()
	var ids []int64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		field := strings.Fields(line)[0]
		id, err := strconv.ParseInt(field, 10, 64)
		if err != nil {
			t.Fatalf("line %q does not start with an ID", line)
		}
		if _, err := snowflake.Decode(id); err != nil {
			t.Fatalf("ID %d does not decode: %v", id, err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestNextThroughZooKeeperAndStaticList(t *testing.T) {
	zks, ws := startWorkers(t, 2)
	var out, errb bytes.Buffer

	if rc := runNext([]string{"--zk", zks.Addr(), "--zk-root", fleetRoot}, &out, &errb); rc != exitOK {
		t.Fatalf("next rc %d, stderr %s", rc, errb.String())
	}
	if ids := parseIDs(t, out.String()); len(ids) != 1 {
		t.Fatalf("next printed %d IDs, want 1:\n%s", len(ids), out.String())
	}

	out.Reset()
	if rc := runNext([]string{"--zk", zks.Addr(), "--zk-root", fleetRoot, "-n", "4096"}, &out, &errb); rc != exitOK {
		t.Fatalf("next -n 4096 rc %d, stderr %s", rc, errb.String())
	}
	ids := parseIDs(t, out.String())
	if len(ids) != 4096 {
		t.Fatalf("next -n 4096 printed %d IDs", len(ids))
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("IDs not ascending at %d: %d after %d", i, ids[i], ids[i-1])
		}
	}

	out.Reset()
	args := []string{"--addr", ws[0].Addr + "," + ws[1].Addr, "-n", "3", "--decode"}
	if rc := runNext(args, &out, &errb); rc != exitOK {
		t.Fatalf("next %v rc %d, stderr %s", args, rc, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("next --decode printed %d lines:\n%s", len(lines), out.String())
	}
	for _, line := range parseIDs(t, out.String()) {
		f, _ := snowflake.Decode(line)
		if !strings.Contains(out.String(), f.Slot().String()) || !strings.Contains(out.String(), "seq ") {
			t.Errorf("--decode output lacks the slot %s and sequence:\n%s", f.Slot(), out.String())
		}
	}
}

func TestSlotsOfRunningWorkers(t *testing.T) {
	zks, ws := startWorkers(t, 2)
	zkFlag := []string{"--zk", zks.Addr(), "--zk-root", fleetRoot}
	var out, errb bytes.Buffer
	if rc := runNext(append(zkFlag, "-n", "10"), &out, &errb); rc != exitOK {
		t.Fatalf("next rc %d, stderr %s", rc, errb.String())
	}
	drawn := parseIDs(t, out.String())
	f, _ := snowflake.Decode(drawn[len(drawn)-1])
	var rep tree.SlotMapView
	// last_ms reaches the slot node with the holder's next renew.
	ok := fleettest.WaitFor(context.Background(), 5*time.Second, func() bool {
		rep = slotsJSON(t, append(zkFlag, "--json"))
		for _, s := range rep.Slots {
			if s.Slot == f.Slot().String() && s.LastMs >= f.UnixMs {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("slot %s never showed last_ms >= %d: %+v", f.Slot(), f.UnixMs, rep)
	}
	if rep.Held != 2 || rep.Free != 1022 {
		t.Fatalf("held %d free %d, want 2 and 1022", rep.Held, rep.Free)
	}
	got := map[string]bool{}
	for _, s := range rep.Slots {
		got[s.Addr] = true
		if s.PID == 0 || s.Host == "" || s.HTTP == "" || s.AheadMs == nil {
			t.Errorf("slot %+v lacks pid, host, http address or reservation", s)
		}
	}
	for _, w := range ws {
		if !got[w.Addr] {
			t.Errorf("worker %s not in the slot map %v", w.Addr, got)
		}
	}
	out.Reset()
	if rc := runSlots(zkFlag, &out, &errb); rc != exitOK || !strings.Contains(out.String(), "held 2, free 1022 (of 1024 in datacenters 0-31)") {
		t.Fatalf("slots table rc %d:\n%s", rc, out.String())
	}
	t.Logf("slots:\n%s", out.String())
}

func TestNextFailsWithoutWorkers(t *testing.T) {
	var out, errb bytes.Buffer
	rc := runNext([]string{"--addr", zktest.FreeAddr(t), "--timeout", "300ms"}, &out, &errb)
	if rc != exitFailure || out.Len() != 0 || !strings.Contains(errb.String(), "no worker available") {
		t.Fatalf("rc %d stdout %q stderr %q; want %d, nothing printed, the cause on stderr", rc, out.String(), errb.String(), exitFailure)
	}
}
