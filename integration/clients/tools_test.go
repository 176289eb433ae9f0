//go:build linux

package clients

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// python is Debian's interpreter: redis-py (python3-redis) is importable by
// it only, not by another python3 earlier on PATH.
const python = testenv.Python

// nodePath is where Debian's node-redis lives.
const nodePath = testenv.NodePath

// cookbook is the folder of the client snippets the docs print.
func cookbook(t testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	dir, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "worker", "cookbook"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// need runs the test only with every client tool (testenv.Require: it
// fails without one, skips under -short or SNOWFLEET_SKIP_CLIENTS=1, never
// in CI).
func need(t testing.TB) {
	t.Helper()
	testenv.Require(t, "haproxy", "redis-cli", "redis-py", "node-redis")
}
