package snowflake

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// shardSkew draws count IDs from g, rate per millisecond every `every`
// milliseconds of clk (a fake clock: no sleeping, no timing), and returns
// for each N the largest deviation of a shard's count (id % N) from an
// even share, as a fraction of that share.
func shardSkew(t *testing.T, g *Generator, clk *stepClock, count, rate, every int, ns []int64) map[int64]float64 {
	t.Helper()
	ids := make([]int64, 0, count)
	for len(ids) < count {
		for range min(rate, count-len(ids)) {
			id, err := g.Next()
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) > 0 && id <= ids[len(ids)-1] {
				t.Fatalf("%d after %d: not ascending", id, ids[len(ids)-1])
			}
			ids = append(ids, id)
		}
		clk.Step(time.Duration(every) * time.Millisecond)
	}
	skew := map[int64]float64{}
	for _, n := range ns {
		shards := make([]int, n)
		for _, id := range ids {
			shards[id%n]++
		}
		even := float64(count) / float64(n)
		for _, c := range shards {
			skew[n] = max(skew[n], abs(float64(c)-even)/even)
		}
	}
	return skew
}

func abs(x float64) float64 { return max(x, -x) }

var shardNs = []int64{2, 4, 10, 16, 64, 1024}

// TestSpreadShardsEvenly: 20,000 IDs at one per millisecond (a fake clock
// stepped by hand) put id % N within 5% of even for N in 2, 4, 10, 16, 64,
// 1024 with StartSpread; with StartZero they do not (every ID ends in
// twelve zero bits). At other rates, N up to 64 are even too.
func TestSpreadShardsEvenly(t *testing.T) {
	t.Parallel()
	for _, mode := range []SequenceStart{StartZero, StartSpread} {
		clk := newStepClock(t0)
		g := newGen(t, func(c *Config) { c.Clock, c.SequenceStart = clk, mode })
		skew := shardSkew(t, g, clk, 20000, 1, 1, shardNs)
		var line strings.Builder
		for _, n := range shardNs {
			fmt.Fprintf(&line, " N=%d: %s", n, pct(skew[n]))
		}
		t.Logf("%s, 20,000 IDs at one per ms, largest shard's deviation from even:%s", mode, line.String())
		for _, n := range shardNs {
			if mode == StartSpread && skew[n] > 0.05 {
				t.Errorf("spread: id %% %d is %s off even, want within 5%%", n, pct(skew[n]))
			}
			if mode == StartZero && skew[n] <= 0.05 {
				t.Errorf("zero: id %% %d is %s off even: the test cannot tell the modes apart", n, pct(skew[n]))
			}
		}
	}
	for _, r := range []struct{ rate, every int }{{2, 1}, {3, 1}, {1, 2}, {1, 7}, {5, 3}, {100, 1}} {
		clk := newStepClock(t0)
		g := newGen(t, func(c *Config) { c.Clock, c.SequenceStart = clk, StartSpread })
		skew := shardSkew(t, g, clk, 20000, r.rate, r.every, shardNs[:5])
		for _, n := range shardNs[:5] {
			if skew[n] > 0.05 {
				t.Errorf("spread, %d IDs every %d ms: id %% %d is %s off even, want within 5%%", r.rate, r.every, n, pct(skew[n]))
			}
		}
	}
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", f*100) }

// TestSpreadKeepsTheRules: with StartSpread, IDs stay strictly ascending,
// a NextN run stays contiguous in one millisecond, Issued counts every ID,
// and a millisecond after a used-up one starts at 0 (the cap is kept: at
// full load every millisecond holds 4,096 IDs).
func TestSpreadKeepsTheRules(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock, c.SequenceStart = clk, StartSpread })
	r := rand.New(rand.NewPCG(5, 6))
	var last int64 = -1
	var issued uint64
	starts := map[int]bool{}
	for range 20000 {
		n := 1
		if r.IntN(4) == 0 {
			n = 1 + r.IntN(MaxBatch)
		}
		before := last
		first, err := g.NextN(n)
		if err != nil {
			t.Fatal(err)
		}
		f, l := mustDecode(t, first), mustDecode(t, first+int64(n)-1)
		if first <= last || f.UnixMs != l.UnixMs || l.Sequence != f.Sequence+n-1 || f.Slot() != g.Slot() {
			t.Fatalf("NextN(%d) = %+v .. %+v after %d: not ascending, or not one contiguous run of the slot", n, f, l, before)
		}
		if before < 0 || mustDecode(t, before).UnixMs != f.UnixMs {
			starts[f.Sequence] = true
		}
		last = first + int64(n) - 1
		issued += uint64(n)
		if got := g.Issued(); got != issued {
			t.Fatalf("Issued = %d after %d IDs", got, issued)
		}
		clk.Step(time.Duration(r.IntN(3)) * time.Millisecond / 2)
	}
	if len(starts) < 1000 {
		t.Fatalf("milliseconds started at only %d distinct sequences", len(starts))
	}

	// Full load: the sequence is used up in every millisecond, and the
	// next one (entered by sleeping, on the fake clock) starts at 0.
	perMs := map[int64]int{}
	for range 5 * MaxBatch {
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("%d after %d", id, last)
		}
		last = id
		perMs[mustDecode(t, id).UnixMs]++
	}
	if full := fullMs(perMs); full < 4 {
		t.Fatalf("at full load %d of %d milliseconds held 4,096 IDs: %v", full, len(perMs), perMs)
	}

	// The same through TryNextN, as the worker's event loop calls it: it
	// is told to wait rather than sleeping, and comes back.
	perMs = map[int64]int{}
	for range 5 * MaxBatch {
		id, retry, err := g.TryNextN(1)
		for ; retry > 0; id, retry, err = g.TryNextN(1) {
			clk.Step(retry)
		}
		if err != nil || id <= last {
			t.Fatalf("TryNextN = %d, %v after %d", id, err, last)
		}
		last = id
		perMs[mustDecode(t, id).UnixMs]++
	}
	if full := fullMs(perMs); full < 4 {
		t.Fatalf("at full load through TryNextN %d of %d milliseconds held 4,096 IDs: %v", full, len(perMs), perMs)
	}
}

func fullMs(perMs map[int64]int) int {
	full := 0
	for _, c := range perMs {
		if c == MaxBatch {
			full++
		}
	}
	return full
}

// TestSpreadRefusesAsZero: the refusals do not change with the start.
func TestSpreadRefusesAsZero(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock, c.SequenceStart, c.Ceiling = clk, StartSpread, t0+1 })
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	clk.Step(2 * time.Millisecond)
	if _, err := g.Next(); !errors.Is(err, ErrPastCeiling) {
		t.Fatalf("past the ceiling: %v, want ErrPastCeiling", err)
	}
	g.SetCeiling(t0 + 100)
	if _, err := g.Next(); err != nil {
		t.Fatal(err)
	}
	clk.Step(-50 * time.Millisecond)
	if _, err := g.Next(); !errors.Is(err, ErrClockRollback) {
		t.Fatalf("clock 50 ms back: %v, want ErrClockRollback", err)
	}
	g.Seal()
	clk.Step(60 * time.Millisecond)
	if _, err := g.Next(); !errors.Is(err, ErrSealed) {
		t.Fatalf("sealed: %v, want ErrSealed", err)
	}
}

func TestParseSequenceStart(t *testing.T) {
	t.Parallel()
	for _, s := range []SequenceStart{StartZero, StartSpread} {
		if got, err := ParseSequenceStart(s.String()); err != nil || got != s {
			t.Fatalf("ParseSequenceStart(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseSequenceStart("random"); err == nil || !strings.Contains(err.Error(), `"random"`) {
		t.Fatalf("ParseSequenceStart(random) = %v, want an error naming it", err)
	}
	cfg := DefaultConfig()
	cfg.SequenceStart = 7
	var ce *configerr.Error
	if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != "SequenceStart" {
		t.Fatalf("Validate = %v, want a configerr.Error naming SequenceStart", err)
	}
}
