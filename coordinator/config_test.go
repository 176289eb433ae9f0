package coordinator

import (
	"testing"

	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// A worker with default flags fits a root made with default flags: the
// root's default bound on Horizon is the lease's default Horizon.
func TestDefaultHorizonIsTheRootBound(t *testing.T) {
	t.Parallel()
	if DefaultHorizon != tree.DefaultMaxHorizon {
		t.Errorf("DefaultHorizon %v, tree.DefaultMaxHorizon %v: a default worker would be refused by a default root, or leave it a bound it never needs",
			DefaultHorizon, tree.DefaultMaxHorizon)
	}
	if cfg := DefaultConfig(); cfg.Horizon != tree.DefaultMaxHorizon || cfg.MaxSkew != tree.DefaultMaxSkew {
		t.Errorf("DefaultConfig: Horizon %v, MaxSkew %v; the root's defaults are %v and %v",
			cfg.Horizon, cfg.MaxSkew, tree.DefaultMaxHorizon, tree.DefaultMaxSkew)
	}
}
