package main

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// scrape returns the samples of /metrics as "name{labels}" -> value.
func (d *daemonProc) scrape() map[string]float64 {
	d.t.Helper()
	code, body := d.get("/metrics")
	if code != 200 {
		d.t.Fatalf("/metrics = %d", code)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			d.t.Fatalf("/metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestOperatorMetrics runs three workers, two pinned to datacenter 3: each
// exports its build, the slot it holds (matching /status), and the fleet's
// held and free slots from its watch on leases/, total and per datacenter,
// which follow a worker leaving.
func TestOperatorMetrics(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	common := []string{"--zk", zks.Addr(), "--zk-root", "/metrics-test",
		"--session-timeout", "4s", "--renew", "200ms", "--horizon", "2s"}
	ds := []*daemonProc{
		startDaemon(t, bin, nil, append(common, "--datacenter", "3")...),
		startDaemon(t, bin, nil, append(common, "--datacenter", "3")...),
		startDaemon(t, bin, nil, common...),
	}
	perDC := map[int]int{}
	for _, d := range ds {
		d.waitReady(15 * time.Second)
		s, err := snowflake.ParseSlot(d.status().Slot)
		if err != nil {
			t.Fatal(err)
		}
		perDC[s.Datacenter]++
	}
	fleetIs := func(d *daemonProc, held int, perDC map[int]int) error {
		m := d.scrape()
		if m["snowflake_fleet_slots_held"] != float64(held) || m["snowflake_fleet_slots_free"] != float64(1024-held) {
			return fmt.Errorf("held %v free %v, want %d %d", m["snowflake_fleet_slots_held"], m["snowflake_fleet_slots_free"], held, 1024-held)
		}
		for dc := 0; dc < 32; dc++ {
			h := m[fmt.Sprintf(`snowflake_fleet_datacenter_slots_held{datacenter="%d"}`, dc)]
			f, ok := m[fmt.Sprintf(`snowflake_fleet_datacenter_slots_free{datacenter="%d"}`, dc)]
			if !ok || h != float64(perDC[dc]) || f != float64(32-perDC[dc]) {
				return fmt.Errorf("datacenter %d: held %v free %v (present %v), want %d", dc, h, f, ok, perDC[dc])
			}
		}
		return nil
	}
	for i, d := range ds {
		m := d.scrape()
		for name, want := range map[string]float64{"renew_interval": 0.2, "horizon": 2, "max_skew": 1, "session_timeout": 4} {
			if got := m["snowflake_coordinator_"+name+"_seconds"]; got != want {
				t.Errorf("worker %d: snowflake_coordinator_%s_seconds = %v, want %v", i, name, got, want)
			}
		}
		// The revision is the toolchain's VCS stamp when the tree has one.
		bi := fmt.Sprintf(`snowflake_build_info{goversion="%s",revision="%s",version="dev"}`, runtime.Version(), buildRevisionOf(t, bin))
		if m[bi] != 1 || countPrefix(m, "snowflake_build_info{") != 1 {
			t.Errorf("worker %d lacks %s", i, bi)
		}
		st := d.status()
		s, _ := snowflake.ParseSlot(st.Slot)
		si := fmt.Sprintf(`snowflake_worker_slot_info{datacenter="%d",machine="%d",slot="%s"}`, s.Datacenter, s.Machine, st.Slot)
		if m[si] != 1 {
			t.Errorf("worker %d (%s) lacks %s", i, st.Slot, si)
		}
		if n := countPrefix(m, "snowflake_worker_slot_info{"); n != 1 {
			t.Errorf("worker %d exports %d slot_info series", i, n)
		}
		pin := countPrefix(m, `snowflake_fleet_pin_info{datacenter="3"}`)
		if want := map[bool]int{true: 1, false: 0}[i < 2]; pin != want || countPrefix(m, "snowflake_fleet_pin_info") != want {
			t.Errorf("worker %d: pin_info series %d, want %d", i, pin, want)
		}
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err = fleetIs(d, 3, perDC); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("worker %d fleet gauges: %v", i, err)
		}
	}

	t.Run("no lease, no slot_info", func(t *testing.T) {
		d := startDaemon(t, bin, nil, "--zk", "127.0.0.1:"+freePort(t))
		if m := d.scrape(); countPrefix(m, "snowflake_worker_slot_info") != 0 || m["snowflake_fleet_slots_held"] != 0 {
			t.Fatalf("without ZooKeeper: slot_info %d series, fleet held %v", countPrefix(m, "snowflake_worker_slot_info"), m["snowflake_fleet_slots_held"])
		}
	})

	// Worker 0 leaves: the others' gauges follow; its own slot_info went
	// with its lease (not scrapable after exit, so checked on the fleet).
	s0, _ := snowflake.ParseSlot(ds[0].status().Slot)
	if code := ds[0].stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	perDC[s0.Datacenter]--
	for _, d := range ds[1:] {
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err = fleetIs(d, 2, perDC); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("after a worker left: %v", err)
		}
	}
}

// buildRevisionOf is the vcs.revision go version -m reads in bin, or "unknown".
func buildRevisionOf(t *testing.T, bin string) string {
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "build" && strings.HasPrefix(f[1], "vcs.revision=") {
			return strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	return "unknown"
}

func countPrefix(m map[string]float64, prefix string) int {
	n := 0
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// initFleetRoot makes root on the ZooKeeper at addr owning the datacenters
// ranges names (as snowflakectl init --datacenters does).
func initFleetRoot(t *testing.T, addr, root, ranges string) tree.DCSet {
	t.Helper()
	owned, err := tree.ParseDCSet(ranges)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := zkconn.Dial([]string{addr}, "", 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ic := tree.DefaultInitConfig()
	ic.Root, ic.Owned, ic.NewFleet = root, owned, true
	if _, err := tree.InitRoot(ctx, conn, ic); err != nil {
		t.Fatalf("init %s --datacenters %s: %v", root, ranges, err)
	}
	return owned
}

// TestFleetGaugesOwnedRange: in a fleet whose root owns datacenters 3-4,
// the free slots are counted of those 64, and only datacenters 3 and 4
// have per-datacenter series.
func TestFleetGaugesOwnedRange(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	initFleetRoot(t, zks.Addr(), "/ranged-metrics", "3-4")
	common := []string{"--zk", zks.Addr(), "--zk-root", "/ranged-metrics",
		"--session-timeout", "4s", "--renew", "200ms", "--horizon", "2s"}
	ds := []*daemonProc{startDaemon(t, bin, nil, common...), startDaemon(t, bin, nil, append(common, "--datacenter", "4")...)}
	perDC := map[int]int{}
	for _, d := range ds {
		d.waitReady(15 * time.Second)
		s, err := snowflake.ParseSlot(d.status().Slot)
		if err != nil {
			t.Fatal(err)
		}
		perDC[s.Datacenter]++
	}
	check := func(d *daemonProc) error {
		m := d.scrape()
		if m["snowflake_fleet_slots_held"] != 2 || m["snowflake_fleet_slots_free"] != 62 {
			return fmt.Errorf("held %v free %v, want 2 and 62 (of the 64 slots of datacenters 3-4)", m["snowflake_fleet_slots_held"], m["snowflake_fleet_slots_free"])
		}
		if n := countPrefix(m, "snowflake_fleet_datacenter_slots_free{"); n != 2 {
			return fmt.Errorf("%d per-datacenter free series, want 2 (datacenters 3 and 4)", n)
		}
		for _, dc := range []int{3, 4} {
			if f := m[fmt.Sprintf(`snowflake_fleet_datacenter_slots_free{datacenter="%d"}`, dc)]; f != float64(32-perDC[dc]) {
				return fmt.Errorf("datacenter %d free %v, want %d", dc, f, 32-perDC[dc])
			}
		}
		return nil
	}
	for i, d := range ds {
		var err error
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err = check(d); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil {
			t.Errorf("worker %d: %v", i, err)
		}
	}
}
