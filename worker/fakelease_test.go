package worker

import (
	"testing"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/snowflake"
)

// fakeLease is an IDSource that always holds one slot (dc07-m11), with a real
// generator whose ceiling is out of reach: for the tests of RESP framing,
// limits and drains, where the lease is not under test. It decides nothing
// ZooKeeper would: what a lease does is TestLiveZooKeeper's, on a real
// coordinator.
type fakeLease struct {
	slot snowflake.Slot
	gen  *snowflake.Generator
}

func newFakeLease(t testing.TB) *fakeLease {
	t.Helper()
	cfg := snowflake.DefaultConfig()
	cfg.Slot = snowflake.Slot{Datacenter: 7, Machine: 11}
	gen, err := snowflake.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeLease{slot: cfg.Slot, gen: gen}
}

func (f *fakeLease) Generator() *snowflake.Generator { return f.gen }
func (f *fakeLease) Ready() bool                     { return true }

func (f *fakeLease) Readiness() coordinator.Readiness {
	return coordinator.Readiness{State: coordinator.StateServing, Slot: f.slot.String(),
		CeilingMs: f.gen.Ceiling(), LastIssuedMs: f.gen.LastMs()}
}

func (f *fakeLease) Status() coordinator.Status {
	return coordinator.Status{State: coordinator.StateServing, Slot: f.slot.String(), Ready: true,
		CeilingMs: f.gen.Ceiling(), LastIssuedMs: f.gen.LastMs(), Issued: f.gen.Issued()}
}
