package snowflake

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// LowerCeiling lowers the ceiling but never below the last issued
// timestamp, ignores a value above the ceiling, and the generator then
// refuses past the lower ceiling.
func TestLowerCeiling(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock = clk; c.Floor = t0 - 10; c.Ceiling = t0 + 30_000 })
	if got := g.LowerCeiling(t0 + 40_000); got != t0+30_000 || g.Ceiling() != t0+30_000 {
		t.Fatalf("LowerCeiling above the ceiling: returned %d, ceiling %d; want both %d", got, g.Ceiling(), t0+30_000)
	}
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Millisecond)
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	// Below the last issued (t0+2): clamped to it.
	if got := g.LowerCeiling(t0 - 5); got != t0+2 || g.Ceiling() != t0+2 {
		t.Fatalf("LowerCeiling below the state: returned %d, ceiling %d; want %d", got, g.Ceiling(), t0+2)
	}
	// The rest of t0+2 is used up and t0+3 is above the ceiling.
	if id, err := g.Next(); !errors.As(err, new(*CeilingError)) {
		t.Fatalf("Next after lowering to the last issued: %d, %v; want a ceiling error", id, err)
	}
	if n := g.Issued(); n != 2 {
		t.Fatalf("Issued = %d, want 2", n)
	}
	g.SetCeiling(t0 + 5_000) // a confirmed write raises it again (the wait moved the clock to t0+3)
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	if ts := mustDecode(t, id).UnixMs; ts != t0+3 {
		t.Fatalf("first ID after raising: ms %d, want %d", ts, t0+3)
	}
	// Nothing issued since a floor: the floor's millisecond moves up.
	h := newGen(t, func(c *Config) { c.Clock = clk; c.Floor = t0 + 100; c.Ceiling = t0 + 30_000 })
	if got := h.LowerCeiling(t0); got != t0+101 {
		t.Fatalf("LowerCeiling of an unused generator with floor %d: %d, want %d", t0+100, got, t0+101)
	}
	// Sealed: nothing changes.
	last := h.Seal()
	if got := h.LowerCeiling(t0); got != t0+101 || last != t0+101 {
		t.Fatalf("sealed: LowerCeiling %d, Seal %d", got, last)
	}
}

// Callers issuing at full speed while the ceiling is lowered under them:
// no ID may carry a timestamp above the ceiling LowerCeiling returned. A
// lowering that only stored the lower ceiling would let a call that read
// the old ceiling just before issue a new millisecond just after.
func TestLowerCeilingRacesIssuers(t *testing.T) {
	// Not t.Parallel: the race it looks for is likeliest with the cores
	// to its issuers alone.
	rounds := 100
	if testing.Short() {
		rounds = 50
	}
	bad := 0
	for r := 0; r < rounds && bad == 0; r++ {
		g := newGen(t, func(c *Config) { c.Clock = SystemClock{}; c.Floor = 0; c.Ceiling = MaxUnixMs })
		var (
			stop atomic.Bool
			wg   sync.WaitGroup
			max  [4]int64
		)
		for i := range max {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for !stop.Load() {
					id, err := g.Next()
					if err != nil {
						continue
					}
					if ts := id>>timestampShift + Epoch; ts > max[i] {
						max[i] = ts
					}
				}
			}()
		}
		time.Sleep(time.Duration(200+r%7*100) * time.Microsecond)
		c := g.LowerCeiling(0) // as low as it goes: the last issued
		time.Sleep(2 * time.Millisecond)
		stop.Store(true)
		wg.Wait()
		for i := range max {
			if max[i] > c {
				bad++
				t.Errorf("round %d: an ID at ms %d, above the ceiling %d LowerCeiling returned", r, max[i], c)
			}
		}
	}
}
