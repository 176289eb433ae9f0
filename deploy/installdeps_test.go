// Package deploy_test guards deploy/install-deps.sh, the one place that
// installs what the tests need (make check and .ci/run both run it): it
// runs in go test ./..., whether or not CI does.
package deploy_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// needed are the Debian packages the tests and the chaos suite use, and
// what for. A package leaves this list only with the last test using it.
var needed = map[string]string{
	"zookeeper":              "the server integration/zktest starts for every ZooKeeper test",
	"redis-tools":            "redis-cli and redis-benchmark, real clients of the RESP tests and make bench-server",
	"redis-server":           "the Redis baseline of make bench-server",
	"debootstrap":            "the ZooKeeper and Prometheus images the chaos suite and make up build offline",
	"debian-archive-keyring": "the keys debootstrap checks the archive with (build-images.sh refuses to run it without them)",
	"haproxy":                "the L4 balancer integration/clients draws IDs through",
	"python3-redis":          "redis-py, a real client of worker/auth_test.go and integration/clients",
	"node-redis":             "node-redis, likewise (NODE_PATH=/usr/share/nodejs)",
	"spin":                   "make model: Spin checks coordinator/model",
	"gcc":                    "make model: builds Spin's verifier",
	"prometheus":             "promtool (make rules) and the binary the suite's Prometheus image copies",
	"chromium":               "headless, renders /slots in TestSlotsPage",
}

// TestInstallDepsKeepsWhatTestsNeed fails when install-deps.sh stops
// installing a package the tests need, or stops starting dockerd for the
// chaos suite, or lets CI skip either.
func TestInstallDepsKeepsWhatTestsNeed(t *testing.T) {
	b, err := os.ReadFile("install-deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	var installed []string
	for _, m := range regexp.MustCompile(`(?m)^\s*(?:\[\[[^\n]*\]\]\s*\|\|\s*)?packages=\(([^)]*)\)`).FindAllStringSubmatch(script, -1) {
		for _, f := range strings.Fields(m[1]) {
			if !strings.Contains(f, "$") {
				installed = append(installed, f)
			}
		}
	}
	for p, why := range needed {
		if !slices.Contains(installed, p) {
			t.Errorf("install-deps.sh no longer installs %s (%s); it installs %v", p, why, installed)
		}
	}
	for _, want := range []struct{ text, why string }{
		{"dockerd", "starts dockerd for the chaos suite"},
		{`CI:-} == true`, "refuses SNOWFLEET_SKIP_*=1 under CI=true"},
		{"SNOWFLEET_SKIP_ZK SNOWFLEET_SKIP_DOCKER", "names both skips it refuses in CI"},
	} {
		if !strings.Contains(script, want.text) {
			t.Errorf("install-deps.sh no longer %s (no %q)", want.why, want.text)
		}
	}
}
