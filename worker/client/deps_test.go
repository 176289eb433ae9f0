package client

import (
	"slices"
	"testing"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// The client reads the znode layout through coordinator/zklayout and dials
// through coordinator/zkconn: a program importing it compiles neither the
// lease protocol (package coordinator) nor anything else of the module's
// beyond what is listed here.
func TestClientDepsLeaveOutLeaseProtocol(t *testing.T) {
	const mod = testenv.Module
	allowed := []string{
		mod + "coordinator/zkconn",
		mod + "coordinator/zklayout",
		mod + "snowflake",
		mod + "snowflake/configerr",
		mod + "snowflake/secretfile",
		mod + "snowflake/tlsfiles",
		mod + "worker/client",
		mod + "worker/resp",
	}
	ours := testenv.ModuleDeps(t, ".")
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
