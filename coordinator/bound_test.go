package coordinator

import (
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// Every slot record a holder writes carries the root's bound (#37 item 3),
// so that it survives the root: the claim's write, each renewal's, and the
// release's.
func TestSlotRecordsCarryTheBound(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	cfg := testConfig(zs.Addr())
	w := startWorker(t, "w", cfg, nil)
	w.waitReady(15 * time.Second)
	data, _, err := obs.Get(cfg.Root)
	if err != nil {
		t.Fatal(err)
	}
	info, err := tree.DecodeRoot(cfg.Root, data)
	if err != nil {
		t.Fatal(err)
	}
	slot, err := snowflake.ParseSlot(w.c.Status().Slot)
	if err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		rec, ok := readSlot(t, obs, cfg.Root, slot)
		if !ok || rec.BoundMs != info.Reach().Milliseconds() || rec.BoundMs == 0 {
			t.Fatalf("%s: slot record %+v carries bound %d ms; want the root's %d", when, rec, rec.BoundMs, info.Reach().Milliseconds())
		}
	}
	check("serving")
	w.Stop()
	check("released")
}
