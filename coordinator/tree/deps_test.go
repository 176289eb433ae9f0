package tree

import (
	"slices"
	"testing"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// The fleet's tree and the lease are two programs: the operator's verbs
// work on the tree, a worker or an embedding program runs the lease. The
// lease reads and writes the tree, so it imports this package; the tree
// and the operator's tool never link the lease (nor the worker's server,
// which holds one).
func TestDependencyDirection(t *testing.T) {
	const mod = testenv.Module
	lease := []string{mod + "coordinator", mod + "coordinator/idlease", mod + "worker"}
	for _, pkg := range []string{mod + "coordinator/tree", mod + "cmd/snowflakectl"} {
		d := testenv.ModuleDeps(t, pkg)
		if !slices.Contains(d, mod+"coordinator/tree") {
			t.Errorf("%s does not build on coordinator/tree; deps %q", pkg, d)
		}
		for _, l := range lease {
			if slices.Contains(d, l) {
				t.Errorf("%s links %s, the lease's side; deps %q", pkg, l, d)
			}
		}
	}
	if d := testenv.ModuleDeps(t, mod+"coordinator"); !slices.Contains(d, mod+"coordinator/tree") {
		t.Errorf("the lease (coordinator) does not import coordinator/tree; deps %q", d)
	}
}
