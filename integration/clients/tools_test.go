//go:build linux

package clients

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// python is Debian's interpreter: redis-py (python3-redis) is importable by
// it only, not by another python3 earlier on PATH.
const python = "/usr/bin/python3"

// nodePath is where Debian's node-redis lives.
const nodePath = "/usr/share/nodejs"

// cookbook is the folder of the client snippets the docs print.
func cookbook(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	dir, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "worker", "cookbook"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// need fails the test when a client tool is missing, unless the developer
// opted out with SNOWFLEET_SKIP_CLIENTS=1 (never under CI=true).
func need(t testing.TB) {
	t.Helper()
	var missing []string
	if _, err := exec.LookPath("haproxy"); err != nil {
		missing = append(missing, "haproxy")
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		missing = append(missing, "redis-tools")
	}
	if err := exec.Command(python, "-c", "import redis").Run(); err != nil {
		missing = append(missing, "python3-redis")
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "nodejs")
	} else if _, err := os.Stat(filepath.Join(nodePath, "redis", "package.json")); err != nil {
		missing = append(missing, "node-redis")
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("SNOWFLEET_SKIP_CLIENTS") == "1" && os.Getenv("CI") != "true" {
		t.Skipf("SKIPPED BY REQUEST (SNOWFLEET_SKIP_CLIENTS=1): missing %v", missing)
	}
	t.Fatalf("missing Debian packages %v: apt-get install -y %v (or make check, which installs them)", missing, missing)
}
