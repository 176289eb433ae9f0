package testenv

import (
	"strings"
	"testing"
)

// Require's verdict for every combination of -short, CI=true, an opt-out
// and a missing tool: a test skips only under -short or by request, and
// never with CI=true; without -short a missing tool fails it.
func TestDecide(t *testing.T) {
	fake := func(missing bool) func(string) (requirement, bool) {
		return func(name string) (requirement, bool) {
			if name != "zookeeper" {
				return requirement{}, false
			}
			return requirement{skipEnv: SkipZooKeeperEnv, missing: func() []string {
				if missing {
					return []string{"java"}
				}
				return nil
			}}, true
		}
	}
	for _, tc := range []struct {
		name          string
		short         bool
		ci, optOut    string
		missing       bool
		skip, fail    string // substrings; "" wants none
		wantNeitherOK bool
	}{
		{name: "present", wantNeitherOK: true},
		{name: "missing", missing: true, fail: "missing: java. make deps installs them; go test -short skips such tests (SNOWFLEET_SKIP_ZK=1 skips them instead)"},
		{name: "short", short: true, missing: true, skip: "needs zookeeper: skipped under -short"},
		{name: "short, present", short: true, skip: "skipped under -short"},
		{name: "short in CI", short: true, ci: "true", fail: "go test -short with CI=true"},
		{name: "opt-out", optOut: "1", missing: true, skip: "skipped by request (SNOWFLEET_SKIP_ZK=1)"},
		{name: "opt-out in CI", optOut: "1", ci: "true", fail: "SNOWFLEET_SKIP_ZK=1 with CI=true"},
		{name: "only 1 opts out", optOut: "yes", wantNeitherOK: true},
		{name: "missing in CI", ci: "true", missing: true, fail: "missing: java"},
	} {
		env := map[string]string{"CI": tc.ci, SkipZooKeeperEnv: tc.optOut}
		skip, fail := decide([]string{"zookeeper"}, tc.short, func(k string) string { return env[k] }, fake(tc.missing))
		switch {
		case tc.wantNeitherOK && (skip != "" || fail != ""):
			t.Errorf("%s: skip %q, fail %q; want neither", tc.name, skip, fail)
		case tc.skip != "" && (fail != "" || !strings.Contains(skip, tc.skip)):
			t.Errorf("%s: skip %q, fail %q; want a skip saying %q", tc.name, skip, fail, tc.skip)
		case tc.fail != "" && (skip != "" || !strings.Contains(fail, tc.fail)):
			t.Errorf("%s: skip %q, fail %q; want a failure saying %q", tc.name, skip, fail, tc.fail)
		}
	}
	if _, fail := decide([]string{"zookeper"}, true, func(string) string { return "" }, fake(false)); !strings.Contains(fail, `no requirement "zookeper"`) {
		t.Errorf("a misspelt requirement: fail %q", fail)
	}
}

// Every name the tests pass is one Require knows.
func TestKnownNames(t *testing.T) {
	for _, n := range []string{"zookeeper", "docker", "redis-cli", "haproxy", "redis-py", "node-redis", "chromium", "curl", "promtool"} {
		if _, ok := lookup(n); !ok {
			t.Errorf("lookup(%q) unknown", n)
		}
	}
}
