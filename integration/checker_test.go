//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

// The suite's verdicts are only as good as its checks: each must catch the
// fault it is for.
func TestCheckersCatchFaults(t *testing.T) {
	id := func(ms int64, m, seq int) int64 {
		v, err := snowflake.Encode(snowflake.Fields{UnixMs: ms, Datacenter: datacenter, Machine: m, Sequence: seq})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	const ms = 1_800_000_000_000
	t0 := time.UnixMilli(ms)

	t.Run("duplicates", func(t *testing.T) {
		ids := []int64{id(ms, 1, 0), id(ms, 2, 0), id(ms, 1, 1), id(ms, 1, 0), id(ms+5, 2, 0), id(ms, 1, 0)}
		n, ex, maxTs := duplicates(ids)
		if n != 2 || len(ex) != 2 {
			t.Errorf("duplicates: %d (%v), want 2", n, ex)
		}
		if got := maxTs[snowflake.Slot{Datacenter: datacenter, Machine: 2}]; got != ms+5 {
			t.Errorf("max ms of m02: %d, want %d", got, ms+5)
		}
		if n, _, _ := duplicates([]int64{id(ms, 1, 0), id(ms, 1, 1), id(ms+1, 1, 0)}); n != 0 {
			t.Errorf("distinct IDs counted %d duplicates", n)
		}
	})

	t.Run("order per slot and client", func(t *testing.T) {
		s := newStream("test", "")
		// Interleaved slots may go down across slots, never within one.
		s.add(t0, id(ms, 1, 0), id(ms, 2, 7), id(ms, 1, 1), id(ms-10, 3, 0), id(ms+1, 2, 0))
		if len(s.violations) != 0 {
			t.Fatalf("violations on increasing slots: %v", s.violations)
		}
		s.add(t0, id(ms, 1, 1)) // slot m01 again at the same ID
		s.add(t0, id(ms-1, 2, 0))
		if len(s.violations) != 2 {
			t.Errorf("violations: %v, want 2", s.violations)
		}
	})

	t.Run("foreign datacenter", func(t *testing.T) {
		s := newStream("test", "")
		other, _ := snowflake.Encode(snowflake.Fields{UnixMs: ms, Datacenter: datacenter + 1, Machine: 1})
		s.add(t0, other, -5)
		if len(s.badIDs) != 2 || len(s.ids) != 0 {
			t.Errorf("bad IDs %v kept %d", s.badIDs, len(s.ids))
		}
	})

	t.Run("slot range", func(t *testing.T) {
		ids := []int64{id(ms+3, 1, 0), id(ms+1, 1, 0), id(ms+9, 2, 0), id(ms+7, 1, 0)}
		lo, hi, n := slotRange(ids, "dc03-m01")
		if lo != ms+1 || hi != ms+7 || n != 3 {
			t.Errorf("slotRange = %d, %d, %d", lo, hi, n)
		}
	})
}
