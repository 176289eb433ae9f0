package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/integration/testenv"
)

// fleetSeries are the metrics the fleet's slot counts are recorded from.
var fleetSeries = []string{"snowflake_coordinator_held_slot_info{", "snowflake_fleet_datacenter_slots{"}

// checkFleetRules scrapes ds, feeds their fleet series to the recording
// rules of deploy/prometheus/rules.yml in a promtool unit test, and has
// promtool hold the recorded held and free slots (per datacenter the root
// owns, and in total) to the slot map read from ZooKeeper: what an
// operator's Prometheus would show is what the fleet's tree holds.
func checkFleetRules(t *testing.T, zkAddr, root string, owned tree.DCSet, ds []*daemonProc) {
	t.Helper()
	testenv.Require(t, "promtool")
	conn, err := zkconn.Dial([]string{zkAddr}, "", 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	m, err := tree.ReadSlotMap(conn, root)
	if err != nil {
		t.Fatal(err)
	}
	perDC := map[int]int{}
	for _, l := range m.Leases {
		perDC[l.Slot.Datacenter]++
	}
	var in []string
	for i, d := range ds {
		for k, v := range d.scrape() {
			for _, p := range fleetSeries {
				if strings.HasPrefix(k, p) {
					in = append(in, fmt.Sprintf("      - {series: '%sinstance=\"w%d\",job=\"snowflaked\",%s', values: '%gx3'}",
						p, i, strings.TrimPrefix(k, p), v))
				}
			}
		}
	}
	sort.Strings(in)
	var free []string
	for dc := range 32 {
		if owned.Has(dc) {
			free = append(free, fmt.Sprintf("          - {labels: 'snowflake:fleet_datacenter_slots_free{root=\"%s\",datacenter=\"%d\"}', value: %d}",
				root, dc, 32-perDC[dc]))
		}
	}
	test := fmt.Sprintf(`rule_files: [%s]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
%s
    promql_expr_test:
      - expr: snowflake:fleet_datacenter_slots_free
        eval_time: 2m
        exp_samples:
%s
      - expr: snowflake:fleet_slots_held:sum
        eval_time: 2m
        exp_samples: [{labels: 'snowflake:fleet_slots_held:sum{root="%s"}', value: %d}]
      - expr: snowflake:fleet_slots_free:sum
        eval_time: 2m
        exp_samples: [{labels: 'snowflake:fleet_slots_free:sum{root="%s"}', value: %d}]
`, rulesPath(t), strings.Join(in, "\n"), strings.Join(free, "\n"), root, len(m.Leases), root, owned.Slots()-len(m.Leases))
	f := testenv.WriteFile(t, t.TempDir(), "fleet_test.yml", test, 0o644)
	if out, err := exec.Command("promtool", "test", "rules", f).CombinedOutput(); err != nil {
		t.Errorf("the fleet figures recorded from %d workers' scrapes are not the slot map's (%d held): %v\n%s\n%s", len(ds), len(m.Leases), err, out, test)
	}
}

func rulesPath(t *testing.T) string {
	p, err := filepath.Abs("../../deploy/prometheus/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}
