package snowflake

import (
	"errors"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// logicalGen is a Logical generator on a step clock, its ceiling far ahead
// unless the test sets it.
func logicalGen(t *testing.T, clk *stepClock, mod func(*Config)) *Generator {
	return newGen(t, func(c *Config) {
		c.Clock, c.OnClockBack, c.MaxLead = clk, Logical, 10*time.Second
		c.Ceiling = t0 + time.Hour.Milliseconds()
		if mod != nil {
			mod(c)
		}
	})
}

// draw takes n IDs, one NextN(batch) at a time, and checks each run is
// contiguous in one millisecond and above everything before it.
func draw(t *testing.T, g *Generator, n, batch int, prev int64) int64 {
	t.Helper()
	for got := 0; got < n; got += batch {
		first, err := g.NextN(batch)
		if err != nil {
			t.Fatalf("after %d IDs: %v", got, err)
		}
		if first <= prev {
			t.Fatalf("ID %d after %d: not ascending", first, prev)
		}
		last := first + int64(batch) - 1
		if mustDecode(t, first).UnixMs != mustDecode(t, last).UnixMs {
			t.Fatalf("NEXTIDS run %d..%d spans two milliseconds", first, last)
		}
		prev = last
	}
	return prev
}

// TestLogicalClockRidesStepBacks: steps back of 1 ms, 2 s and 20 s (the
// last past MaxLead 30 s here), with the sequence used up while stepped
// back: every ID ascends, none repeats, no sleep, and the lead and the
// logical count show it; once the clock catches up the generator is back
// on wall time with no jump.
func TestLogicalClockRidesStepBacks(t *testing.T) {
	t.Parallel()
	for _, step := range []time.Duration{time.Millisecond, 2 * time.Second, 20 * time.Second} {
		t.Run(step.String(), func(t *testing.T) {
			clk := newStepClock(t0)
			g := logicalGen(t, clk, func(c *Config) { c.MaxLead = 30 * time.Second })
			prev := draw(t, g, 4096, 64, 0)
			clk.Step(-step)
			// Three milliseconds' worth while the clock stands still: the
			// sequence runs on, then the next milliseconds are taken.
			prev = draw(t, g, 3*4096, 512, prev)
			if clk.sleeps.Load() != 0 {
				t.Errorf("the generator slept %d times on a logical clock", clk.sleeps.Load())
			}
			lead := g.LeadMs()
			if want := step.Milliseconds() + 3; lead != want {
				t.Errorf("lead %d ms, want %d (the step plus the 3 ms taken ahead)", lead, want)
			}
			if n := g.LogicalIssued(); n != 3*4096 {
				t.Errorf("LogicalIssued %d, want %d", n, 3*4096)
			}
			// The clock catches up: wall time again, the first ID at the
			// clock's millisecond, not ahead of it.
			clk.Step(step + 10*time.Millisecond)
			first, err := g.Next()
			if err != nil || first <= prev {
				t.Fatalf("after catching up: %d, %v (prev %d)", first, err, prev)
			}
			if got, want := mustDecode(t, first).UnixMs, clk.UnixNano()/int64(time.Millisecond); got != want {
				t.Errorf("after catching up the ID is at %d, the clock at %d", got, want)
			}
			if g.LeadMs() != 0 {
				t.Errorf("lead %d ms after catching up", g.LeadMs())
			}
		})
	}
}

// TestLogicalClockBounds: the logical clock refuses (a *RollbackError, as
// Refuse does) rather than lead the clock by more than MaxLead, or pass
// the ceiling; and Refuse still refuses past MaxRollbackWait.
func TestLogicalClockBounds(t *testing.T) {
	t.Parallel()
	t.Run("lead", func(t *testing.T) {
		clk := newStepClock(t0)
		g := logicalGen(t, clk, func(c *Config) { c.MaxLead = 3 * time.Millisecond })
		draw(t, g, 1, 1, 0)
		clk.Step(-time.Millisecond) // 1 ms behind: 2 more ms may be taken, not 3
		prev := draw(t, g, 4095+4096*2, 1, 0)
		_, err := g.Next()
		var rb *RollbackError
		if !errors.As(err, &rb) || rb.MaxLead != 3*time.Millisecond {
			t.Fatalf("past the lead bound: %v, want a RollbackError naming MaxLead", err)
		}
		if f := mustDecode(t, prev); f.UnixMs-clk.UnixNano()/int64(time.Millisecond) > 3 {
			t.Fatalf("issued at %d, %d ms ahead of the clock", f.UnixMs, f.UnixMs-clk.UnixNano()/int64(time.Millisecond))
		}
	})
	t.Run("ceiling", func(t *testing.T) {
		clk := newStepClock(t0)
		g := logicalGen(t, clk, func(c *Config) { c.Ceiling = t0 + 1 })
		draw(t, g, 1, 1, 0)
		clk.Step(-time.Second)
		prev := draw(t, g, 4095+4096, 1, 0) // the rest of t0, then all of t0+1
		if got := mustDecode(t, prev).UnixMs; got != t0+1 {
			t.Fatalf("last ID at %d, want the ceiling %d", got, t0+1)
		}
		_, err := g.Next()
		var rb *RollbackError
		if !errors.As(err, &rb) || rb.CeilingMs != t0+1 || !errors.Is(err, ErrClockRollback) {
			t.Fatalf("past the ceiling: %v, want a RollbackError naming the ceiling", err)
		}
	})
	t.Run("refuse", func(t *testing.T) {
		clk := newStepClock(t0)
		g := newGen(t, func(c *Config) { c.Clock = clk })
		draw(t, g, 1, 1, 0)
		clk.Step(-2 * time.Second)
		if _, err := g.Next(); !errors.Is(err, ErrClockRollback) {
			t.Fatalf("Refuse, 2 s behind: %v", err)
		}
		if g.LogicalIssued() != 0 {
			t.Fatal("Refuse issued on a logical clock")
		}
	})
}

func TestLogicalConfigChecked(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.OnClockBack, cfg.MaxLead = Logical, 0
	var ce *configerr.Error
	if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != "MaxLead" {
		t.Fatalf("Logical with MaxLead 0: %v", err)
	}
	if _, err := ParseClockBackPolicy("sometimes"); err == nil {
		t.Fatal("ParseClockBackPolicy accepted sometimes")
	}
	for _, p := range []ClockBackPolicy{Refuse, Logical} {
		if q, err := ParseClockBackPolicy(p.String()); err != nil || q != p {
			t.Fatalf("%v round-trips to %v, %v", p, q, err)
		}
	}
}
