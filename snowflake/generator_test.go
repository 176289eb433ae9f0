package snowflake

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

const t0 = 1700000000000 // a Unix ms test time

func newGen(t *testing.T, mod func(*Config)) *Generator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Slot = Slot{Datacenter: 7, Machine: 13}
	if mod != nil {
		mod(&cfg)
	}
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustDecode(t *testing.T, id int64) Fields {
	t.Helper()
	f, err := Decode(id)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestNextStampsSlotAndTime(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock = clk })
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	want := Fields{UnixMs: t0, Datacenter: 7, Machine: 13, Sequence: 0}
	if f := mustDecode(t, id); f != want {
		t.Fatalf("first ID decodes to %+v, want %+v", f, want)
	}
	id2, _ := g.Next()
	if id2 != id+1 {
		t.Fatalf("second ID in the same ms = %d, want %d", id2, id+1)
	}
	if g.Issued() != 2 || g.LastMs() != t0 {
		t.Fatalf("Issued %d LastMs %d", g.Issued(), g.LastMs())
	}
}

// Exhausting a millisecond makes the generator sleep to the next one: one
// Sleep call, not a loop of clock reads.
func TestExhaustedSequenceSleepsToNextMillisecond(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	clk.Step(300 * time.Microsecond)
	g := newGen(t, func(c *Config) { c.Clock = clk })
	var last int64 = -1
	for i := 0; i < MaxBatch; i++ {
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("not increasing: %d after %d", id, last)
		}
		last = id
	}
	if n := clk.sleeps.Load(); n != 0 {
		t.Fatalf("slept %d times inside one millisecond", n)
	}
	reads := clk.reads.Load()
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	if f := mustDecode(t, id); f.UnixMs != t0+1 || f.Sequence != 0 {
		t.Fatalf("after exhaustion got %+v, want ms %d sequence 0", f, t0+1)
	}
	if n := clk.sleeps.Load(); n != 1 {
		t.Fatalf("slept %d times, want exactly 1", n)
	}
	if r := clk.reads.Load() - reads; r > 2 {
		t.Fatalf("read the clock %d times to cross one millisecond: spinning", r)
	}
}

func TestNextNContiguous(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock = clk })
	first, err := g.NextN(100)
	if err != nil {
		t.Fatal(err)
	}
	if f := mustDecode(t, first); f.Sequence != 0 || f.UnixMs != t0 {
		t.Fatalf("first of run = %+v", f)
	}
	next, _ := g.Next()
	if next != first+100 {
		t.Fatalf("Next after NextN(100) = %d, want %d", next, first+100)
	}
	// 4000 no longer fit in this millisecond: the run moves to the next one.
	run, err := g.NextN(4000)
	if err != nil {
		t.Fatal(err)
	}
	if f := mustDecode(t, run); f.UnixMs != t0+1 || f.Sequence != 0 {
		t.Fatalf("run that does not fit = %+v, want next ms, sequence 0", f)
	}
	full, _ := g.NextN(MaxBatch)
	if f := mustDecode(t, full); f.UnixMs != t0+2 || f.Sequence != 0 {
		t.Fatalf("full run = %+v", f)
	}
	if f := mustDecode(t, full+MaxBatch-1); f.UnixMs != t0+2 || f.Sequence != MaxSequence {
		t.Fatalf("last of full run = %+v", f)
	}
	if g.Issued() != 100+1+4000+4096 {
		t.Fatalf("Issued = %d", g.Issued())
	}
	for _, n := range []int{0, -1, MaxBatch + 1} {
		if _, err := g.NextN(n); err == nil || !strings.Contains(err.Error(), "count") {
			t.Errorf("NextN(%d) error = %v, want one naming the count", n, err)
		}
	}
}

func TestConcurrentStrictlyIncreasingPerGoroutineAndUnique(t *testing.T) {
	t.Parallel()
	g := newGen(t, nil)
	const workers, each = 16, 5000
	results := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]int64, 0, each)
			for i := 0; i < each; i++ {
				if i%7 == 0 {
					first, err := g.NextN(1 + i%50)
					if err != nil {
						t.Error(err)
						return
					}
					for k := 0; k < 1+i%50; k++ {
						ids = append(ids, first+int64(k))
					}
					continue
				}
				id, err := g.Next()
				if err != nil {
					t.Error(err)
					return
				}
				ids = append(ids, id)
			}
			results[w] = ids
		}()
	}
	wg.Wait()
	seen := make(map[int64]struct{}, workers*each*2)
	for _, ids := range results {
		for i, id := range ids {
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("goroutine saw %d after %d", id, ids[i-1])
			}
			if _, dup := seen[id]; dup {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = struct{}{}
		}
	}
	if uint64(len(seen)) != g.Issued() {
		t.Fatalf("Issued = %d, collected %d", g.Issued(), len(seen))
	}
}

func TestSmallRollbackWaits(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock = clk; c.MaxRollbackWait = 5 * time.Millisecond })
	a, _ := g.NextN(MaxBatch) // t0 is used up
	clk.Step(-3 * time.Millisecond)
	b, err := g.Next()
	if err != nil {
		t.Fatalf("a 3 ms step back within a 5 ms bound must wait, got %v", err)
	}
	if b <= a+MaxBatch-1 {
		t.Fatalf("after the wait got %d, not above %d", b, a+MaxBatch-1)
	}
	if f := mustDecode(t, b); f.UnixMs != t0+1 {
		t.Fatalf("after the wait the ID is at %d, want %d", f.UnixMs, t0+1)
	}
}

func TestLargeRollbackFailsFastUntilClockCatchesUp(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock = clk; c.MaxRollbackWait = 5 * time.Millisecond })
	a, _ := g.Next()
	clk.Step(-2 * time.Second)
	_, err := g.Next()
	var re *RollbackError
	if !errors.Is(err, ErrClockRollback) || !errors.As(err, &re) {
		t.Fatalf("error = %v, want ErrClockRollback", err)
	}
	if re.Behind != 2*time.Second || !strings.Contains(err.Error(), "2s") {
		t.Fatalf("rollback says %v (%q), want 2s", re.Behind, err)
	}
	if clk.sleeps.Load() != 0 {
		t.Fatal("a large rollback must fail fast, not sleep")
	}
	if _, err := g.NextN(10); !errors.Is(err, ErrClockRollback) {
		t.Fatalf("NextN during rollback: %v", err)
	}
	clk.Step(2 * time.Second)
	b, err := g.Next()
	if err != nil || b <= a {
		t.Fatalf("after the clock caught up: %d, %v (previous %d)", b, err, a)
	}
}

func TestFloorIsExclusive(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock = clk; c.Floor = t0 + 2; c.MaxRollbackWait = 5 * time.Millisecond })
	id, err := g.Next() // clock is 2 ms behind the floor: waits
	if err != nil {
		t.Fatal(err)
	}
	if f := mustDecode(t, id); f.UnixMs != t0+3 {
		t.Fatalf("first ID at %d, want %d (strictly above the floor)", f.UnixMs, t0+3)
	}
	g2 := newGen(t, func(c *Config) { c.Clock = frozenClock{t0 * 1e6}; c.Floor = t0 + 1000 })
	if _, err := g2.Next(); !errors.Is(err, ErrClockRollback) {
		t.Fatalf("clock far below the floor: %v, want ErrClockRollback", err)
	}
	// SetFloor moves an idle generator above the new floor.
	g.SetFloor(t0 + 10)
	clk.Step(5 * time.Millisecond)
	id, err = g.Next()
	if err != nil {
		t.Fatal(err)
	}
	if f := mustDecode(t, id); f.UnixMs != t0+11 {
		t.Fatalf("after SetFloor(+10) ID at %d", f.UnixMs)
	}
}

func TestCeiling(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock = clk; c.Ceiling = t0 + 1 })
	if _, err := g.NextN(MaxBatch); err != nil {
		t.Fatal(err)
	}
	if _, err := g.NextN(MaxBatch); err != nil {
		t.Fatal(err) // t0+1 is still at the ceiling
	}
	_, err := g.Next()
	var ce *CeilingError
	if !errors.Is(err, ErrPastCeiling) || !errors.Is(err, ErrNoLease) || !errors.As(err, &ce) {
		t.Fatalf("past the ceiling: %v", err)
	}
	if ce.CeilingMs != t0+1 {
		t.Fatalf("ceiling in error = %d", ce.CeilingMs)
	}
	g.SetCeiling(t0) // lowering is ignored
	if g.Ceiling() != t0+1 {
		t.Fatalf("ceiling lowered to %d", g.Ceiling())
	}
	g.SetCeiling(t0 + 100)
	id, err := g.Next()
	if err != nil {
		t.Fatal(err)
	}
	if f := mustDecode(t, id); f.UnixMs != t0+2 {
		t.Fatalf("after raising the ceiling: %+v", f)
	}
	// The zero ceiling issues nothing.
	g0 := newGen(t, func(c *Config) { c.Clock = clk; c.Ceiling = 0 })
	if _, err := g0.Next(); !errors.Is(err, ErrNoLease) {
		t.Fatalf("zero ceiling: %v", err)
	}
}

// The ceiling is moved by another goroutine while many issue: no ID is ever
// above the ceiling that was set when it was issued.
func TestCeilingMovedConcurrently(t *testing.T) {
	// Not t.Parallel: the race it looks for is likeliest with the cores
	// to its issuers alone.
	g := newGen(t, func(c *Config) { c.Ceiling = time.Now().UnixMilli() + 5 })
	stop := make(chan struct{})
	var wg sync.WaitGroup
	maxSeen := make([]int64, 4)
	for w := range maxSeen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				id, err := g.Next()
				if err != nil {
					if errors.Is(err, ErrSealed) {
						return
					}
					if !errors.Is(err, ErrPastCeiling) {
						t.Error(err)
						return
					}
					runtime.Gosched()
					continue
				}
				maxSeen[w] = max(maxSeen[w], mustDecode(t, id).UnixMs)
			}
		}()
	}
	for i := 0; i < 20; i++ {
		time.Sleep(2 * time.Millisecond)
		g.SetCeiling(time.Now().UnixMilli() + 2)
	}
	final := g.Ceiling()
	g.Seal()
	close(stop)
	wg.Wait()
	for _, m := range maxSeen {
		if m > final {
			t.Fatalf("issued at %d, above the ceiling %d", m, final)
		}
	}
}

func TestSeal(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock = clk; c.Floor = t0 - 10 })
	if last := newGen(t, func(c *Config) { c.Clock = clk; c.Floor = t0 - 10 }).Seal(); last != t0-10 {
		t.Fatalf("Seal of an unused generator = %d, want the floor %d", last, t0-10)
	}
	g.Next()
	clk.Step(3 * time.Millisecond)
	g.Next()
	if last := g.Seal(); last != t0+3 {
		t.Fatalf("Seal = %d, want %d", last, t0+3)
	}
	if _, err := g.Next(); !errors.Is(err, ErrSealed) || !errors.Is(err, ErrNoLease) {
		t.Fatalf("after Seal: %v", err)
	}
	if _, err := g.NextN(5); !errors.Is(err, ErrSealed) {
		t.Fatalf("NextN after Seal: %v", err)
	}
	if g.Seal() != t0+3 || !g.Sealed() {
		t.Fatal("second Seal must be harmless")
	}
}

// After Seal returns, no goroutine gets an ID above what Seal reported.
func TestSealRacesIssuers(t *testing.T) {
	// Not t.Parallel: the race it looks for is likeliest with the cores
	// to its issuers alone.
	for round := 0; round < 20; round++ {
		g := newGen(t, nil)
		var wg sync.WaitGroup
		got := make([][]int64, 4)
		for w := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					id, err := g.Next()
					if err != nil {
						return
					}
					got[w] = append(got[w], id)
				}
			}()
		}
		time.Sleep(time.Millisecond)
		last := g.Seal()
		wg.Wait()
		for _, ids := range got {
			for _, id := range ids {
				if mustDecode(t, id).UnixMs > last {
					t.Fatalf("ID at %d after Seal reported %d", mustDecode(t, id).UnixMs, last)
				}
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Slot.Datacenter = 32 }, "datacenter 32"},
		{func(c *Config) { c.Slot.Machine = -1 }, "machine -1"},
		{func(c *Config) { c.Floor = 5 }, "Floor"},
		{func(c *Config) { c.Ceiling = 5 }, "Ceiling"},
		{func(c *Config) { c.MaxRollbackWait = -time.Second }, "MaxRollbackWait -1s"},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		c.mod(&cfg)
		_, err := NewGenerator(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error = %v, want one naming %q", err, c.want)
		}
	}
}

// Below the cap every ID reads the clock, so its timestamp is the clock's.
// At the cap (a millisecond entered after sleeping for it) most IDs are
// issued from the state alone, and the clock is still read every eighth ID.
func TestClockReads(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	g := newGen(t, func(c *Config) { c.Clock = clk })
	for i := 0; i < 10; i++ {
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		if f := mustDecode(t, id); f.UnixMs != t0+int64(i)*7 {
			t.Fatalf("ID %d at %d, want the clock's %d", i, f.UnixMs, t0+int64(i)*7)
		}
		clk.Step(7 * time.Millisecond)
	}
	if _, err := g.NextN(MaxBatch - 1); err != nil { // use up this millisecond
		t.Fatal(err)
	}
	if _, err := g.Next(); err != nil { // sleeps into the next one
		t.Fatal(err)
	}
	reads := clk.reads.Load()
	for i := 0; i < 4000; i++ {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if r := clk.reads.Load() - reads; r > 4000/8+1 || r < 4000/8-1 {
		t.Fatalf("read the clock %d times for 4000 IDs at the cap, want about 500", r)
	}
	// The burst stops; the clock moves on. Within 8 IDs the timestamp is
	// the clock's again.
	clk.Step(time.Second)
	var f Fields
	for i := 0; i < 8; i++ {
		id, _ := g.Next()
		f = mustDecode(t, id)
	}
	if f.UnixMs != t0+70+1000+1 {
		t.Fatalf("8 IDs after a pause the timestamp is %d, want %d", f.UnixMs, t0+70+1000+1)
	}
}

func TestSystemClockSleepsPrecisely(t *testing.T) {
	t.Parallel()
	// Not a speed test: it checks that short sleeps are not rounded to zero.
	var c SystemClock
	start := time.Now()
	c.Sleep(300 * time.Microsecond)
	if d := time.Since(start); d < 300*time.Microsecond {
		t.Fatalf("slept %v, less than asked", d)
	}
}

// TryNextN never sleeps: with the millisecond used up it reserves nothing
// and says how long until the next one, after which it issues there.
func TestTryNextNReturnsTheWait(t *testing.T) {
	t.Parallel()
	clk := newStepClock(t0)
	clk.Step(300 * time.Microsecond)
	g := newGen(t, func(c *Config) { c.Clock = clk })
	first, retry, err := g.TryNextN(MaxBatch)
	if err != nil || retry != 0 {
		t.Fatalf("TryNextN in a fresh ms = %d, %v, %v", first, retry, err)
	}
	if _, retry, err = g.TryNextN(1); err != nil || retry != 700*time.Microsecond {
		t.Fatalf("TryNextN with the ms used up: retry %v, %v; want 700µs", retry, err)
	}
	if clk.sleeps.Load() != 0 || g.Issued() != MaxBatch {
		t.Fatalf("slept %d times, issued %d: TryNextN must neither sleep nor reserve", clk.sleeps.Load(), g.Issued())
	}
	clk.Step(retry)
	next, retry, err := g.TryNextN(2)
	if err != nil || retry != 0 || mustDecode(t, next).UnixMs != t0+1 || next <= first+MaxBatch-1 {
		t.Fatalf("after the wait: %d (%+v), %v, %v", next, mustDecode(t, next), retry, err)
	}
	if _, _, err := g.TryNextN(0); err == nil {
		t.Fatal("TryNextN(0) accepted")
	}
}
