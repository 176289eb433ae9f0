package client

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The client reads the znode layout through coordinator/zklayout and dials
// through coordinator/zkconn: a program importing it compiles neither the
// lease protocol (package coordinator) nor anything else of the module's
// beyond what is listed here.
func TestClientDepsLeaveOutLeaseProtocol(t *testing.T) {
	const mod = "github.com/snowfleet/snowfleet/"
	allowed := []string{
		mod + "coordinator/zkconn",
		mod + "coordinator/zklayout",
		mod + "snowflake",
		mod + "snowflake/configerr",
		mod + "snowflake/tlsfiles",
		mod + "worker/client",
		mod + "worker/resp",
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command lists the client's imports: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var ours []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, mod) {
			ours = append(ours, p)
		}
	}
	for _, p := range ours {
		if !slices.Contains(allowed, p) {
			t.Errorf("worker/client compiles %s; the client's snowfleet imports are only %v", p, allowed)
		}
	}
	for _, p := range allowed {
		if !slices.Contains(ours, p) {
			t.Errorf("worker/client no longer compiles %s (go list -deps says %v): update the list", p, ours)
		}
	}
}
