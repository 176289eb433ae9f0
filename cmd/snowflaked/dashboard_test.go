package main

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

var (
	metricName = regexp.MustCompile(`\bsnowflake[_:][a-z0-9_:]+`)
	recordName = regexp.MustCompile(`(?m)^\s*- record: (snowflake:[a-z0-9_:]+)\s*$`)
)

// TestDashboardAndRulesNameRealMetrics scrapes a live worker and checks that
// every metric a panel of deploy/grafana/snowfleet.json or a rule of
// deploy/prometheus/rules.yml names is one the worker exports (the
// client's, in the rules, are checked against worker/client's source), or
// one a recording rule of rules.yml records.
func TestDashboardAndRulesNameRealMetrics(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	d := startDaemon(t, bin, nil, "--zk", zks.Addr(), "--zk-root", "/dashboard-test", "--datacenter", "2",
		"--session-timeout", "4s", "--renew", "200ms", "--horizon", "2s")
	d.waitReady(15 * time.Second)
	d.cli("NEXTID")
	exported := map[string]bool{}
	for k := range d.scrape() {
		exported[strings.SplitN(k, "{", 2)[0]] = true
	}
	rules, err := os.ReadFile("../../deploy/prometheus/rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range recordName.FindAllStringSubmatch(string(rules), -1) {
		exported[m[1]] = true
	}

	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b, err := os.ReadFile("../../deploy/grafana/snowfleet.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("snowfleet.json: %v", err)
	}
	named := 0
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			names := metricName.FindAllString(tg.Expr, -1)
			if len(names) == 0 {
				t.Errorf("panel %q: query %q names no snowflake metric", p.Title, tg.Expr)
			}
			for _, n := range names {
				named++
				if !exported[n] {
					t.Errorf("panel %q names %s, which neither the worker exports nor rules.yml records", p.Title, n)
				}
			}
		}
	}

	client, err := os.ReadFile("../../worker/client/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	var ruleNames []string
	for _, line := range strings.Split(string(rules), "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "#") || strings.HasPrefix(l, "runbook_url:") {
			continue
		}
		ruleNames = append(ruleNames, metricName.FindAllString(line, -1)...)
	}
	for _, n := range ruleNames {
		if strings.HasPrefix(n, "snowflake_client_") {
			if !strings.Contains(string(client), `"`+n+`"`) {
				t.Errorf("rules.yml names %s, which worker/client does not export", n)
			}
		} else if !exported[n] {
			t.Errorf("rules.yml names %s, which neither the worker exports nor a rule records", n)
		}
	}
	var all []string
	for n := range exported {
		all = append(all, n)
	}
	sort.Strings(all)
	t.Logf("%d panel and %d rule references checked against %d exported names", named, len(ruleNames), len(all))
}
