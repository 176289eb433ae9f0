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
// exports its build and the slot it holds (matching /status), and the
// fleet's held and free slots that deploy/prometheus/rules.yml records from
// their scrapes (run by promtool) are the slot map's, total and per
// datacenter, and follow a worker leaving.
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
	for _, d := range ds {
		d.waitReady(15 * time.Second)
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
		if n := countPrefix(m, "snowflake_fleet_datacenter_slots{"); n != 32 {
			t.Errorf("worker %d exports the slots of %d datacenters, want 32 (a root made without ranges)", i, n)
		}
	}
	checkFleetRules(t, zks.Addr(), "/metrics-test", tree.AllDatacenters, ds)

	t.Run("no lease, no slot_info", func(t *testing.T) {
		d := startDaemon(t, bin, nil, "--zk", "127.0.0.1:"+freePort(t))
		if m := d.scrape(); countPrefix(m, "snowflake_worker_slot_info") != 0 || countPrefix(m, "snowflake_coordinator_held_slot_info") != 0 ||
			countPrefix(m, "snowflake_fleet_datacenter_slots") != 0 {
			t.Fatalf("without ZooKeeper: slot_info %d series, held_slot_info %d, datacenter_slots %d", countPrefix(m, "snowflake_worker_slot_info"),
				countPrefix(m, "snowflake_coordinator_held_slot_info"), countPrefix(m, "snowflake_fleet_datacenter_slots"))
		}
	})

	// Worker 0 leaves (and is no longer scraped): the figures follow.
	if code := ds[0].stop(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	checkFleetRules(t, zks.Addr(), "/metrics-test", tree.AllDatacenters, ds[1:])
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
// only datacenters 3 and 4 have slots, and the free slots are counted of
// those 64.
func TestFleetGaugesOwnedRange(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	owned := initFleetRoot(t, zks.Addr(), "/ranged-metrics", "3-4")
	common := []string{"--zk", zks.Addr(), "--zk-root", "/ranged-metrics",
		"--session-timeout", "4s", "--renew", "200ms", "--horizon", "2s"}
	ds := []*daemonProc{startDaemon(t, bin, nil, common...), startDaemon(t, bin, nil, append(common, "--datacenter", "4")...)}
	for _, d := range ds {
		d.waitReady(15 * time.Second)
	}
	for i, d := range ds {
		m := d.scrape()
		for dc := range 32 {
			_, ok := m[fmt.Sprintf(`snowflake_fleet_datacenter_slots{datacenter="%d",root="/ranged-metrics"}`, dc)]
			if want := owned.Has(dc); ok != want {
				t.Errorf("worker %d: datacenter %d's slots exported %v, want %v (the root owns 3-4)", i, dc, ok, want)
			}
		}
	}
	checkFleetRules(t, zks.Addr(), "/ranged-metrics", owned, ds)
}
