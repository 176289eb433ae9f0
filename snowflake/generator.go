package snowflake

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// Config configures a Generator.
type Config struct {
	// Slot is the (datacenter, machine) pair stamped into every ID.
	Slot Slot
	// Floor is a Unix ms timestamp the generator starts strictly above: the
	// first ID's timestamp is > Floor whatever the clock says. The coordinator
	// sets it to the reservation the previous holder of the slot left.
	Floor int64
	// Ceiling is the highest Unix ms timestamp the generator may issue until
	// SetCeiling raises it. 0 means nothing may be issued yet.
	Ceiling int64
	// MaxRollbackWait is how far behind the last issued timestamp the clock
	// may be for the generator to wait for it; beyond this it fails fast with
	// ErrClockRollback.
	MaxRollbackWait time.Duration
	// Clock is the source of time; nil means SystemClock.
	Clock Clock
	// OnClockBack is what the generator does when the clock is behind the
	// last issued timestamp by more than MaxRollbackWait: Refuse (fail fast
	// with a *RollbackError until the clock catches up) or Logical (go on
	// from the last issued timestamp, taking the next millisecond when its
	// sequence is used up, within MaxLead and the ceiling).
	OnClockBack ClockBackPolicy
	// MaxLead bounds Logical: the generator never issues a timestamp more
	// than MaxLead ahead of the clock; beyond it, it refuses as Refuse does.
	// Ignored with Refuse.
	MaxLead time.Duration
	// SequenceStart is the sequence each millisecond's first ID takes:
	// StartZero (0, the default) or StartSpread (spread over the
	// milliseconds, so that the low bits of the IDs shard evenly at any
	// rate). A millisecond taken by the logical clock starts at 0.
	SequenceStart SequenceStart
}

// ClockBackPolicy is Config.OnClockBack.
type ClockBackPolicy int

const (
	// Refuse fails fast with a *RollbackError while the clock is behind
	// the last issued timestamp by more than MaxRollbackWait.
	Refuse ClockBackPolicy = iota
	// Logical keeps issuing from the last issued timestamp (a logical
	// clock), at most MaxLead ahead of the clock and never above the
	// ceiling, until the clock catches up.
	Logical
)

func (p ClockBackPolicy) String() string {
	if p == Logical {
		return "logical"
	}
	return "refuse"
}

// ParseClockBackPolicy reads "refuse" or "logical".
func ParseClockBackPolicy(s string) (ClockBackPolicy, error) {
	switch s {
	case "refuse":
		return Refuse, nil
	case "logical":
		return Logical, nil
	}
	return Refuse, fmt.Errorf("clock-back policy %q: want refuse or logical", s)
}

// DefaultConfig is a generator for slot dc00-m00 with no floor, an unbounded
// ceiling, a 5 ms rollback wait and Refuse beyond it: fit for standalone
// use (without a ceiling a logical clock could run ahead unchecked, so
// Logical is for generators under a lease). The coordinator overrides
// Slot, Floor and Ceiling from its lease.
func DefaultConfig() Config {
	return Config{
		Ceiling:         MaxUnixMs,
		MaxRollbackWait: 5 * time.Millisecond,
		Clock:           SystemClock{},
		MaxLead:         10 * time.Second,
	}
}

// Validate names the first field that is out of range, as a *configerr.Error.
func (c Config) Validate() error {
	if err := c.Slot.Validate(); err != nil {
		return &configerr.Error{Field: "Slot", Value: c.Slot, Reason: "is not a valid slot", Err: err}
	}
	inRange := fmt.Sprintf("is out of range %d..%d (unix ms)", MinUnixMs, MaxUnixMs)
	if c.Floor != 0 && (c.Floor < MinUnixMs || c.Floor > MaxUnixMs) {
		return &configerr.Error{Field: "Floor", Value: c.Floor, Reason: inRange}
	}
	if c.Ceiling != 0 && (c.Ceiling < MinUnixMs || c.Ceiling > MaxUnixMs) {
		return &configerr.Error{Field: "Ceiling", Value: c.Ceiling, Reason: inRange}
	}
	if c.MaxRollbackWait < 0 || c.MaxRollbackWait > time.Second {
		return &configerr.Error{Field: "MaxRollbackWait", Value: c.MaxRollbackWait, Reason: "is out of range 0..1s"}
	}
	if c.OnClockBack != Refuse && c.OnClockBack != Logical {
		return &configerr.Error{Field: "OnClockBack", Value: int(c.OnClockBack), Reason: "is neither Refuse nor Logical"}
	}
	if c.OnClockBack == Logical && c.MaxLead <= 0 {
		return &configerr.Error{Field: "MaxLead", Value: c.MaxLead, Reason: "must be positive with OnClockBack logical"}
	}
	if c.SequenceStart != StartZero && c.SequenceStart != StartSpread {
		return &configerr.Error{Field: "SequenceStart", Value: int(c.SequenceStart), Reason: "is neither StartZero nor StartSpread"}
	}
	return nil
}

// The state word packs the last issued timestamp (ms since Epoch) and
// sequence, timestamp<<SequenceBits | sequence, so one CAS advances both.
// Two flag bits above the 53 used ones: sealedBit stops all issuing;
// floorBit marks a state that was set, not issued (the floor), so Issued
// does not count its sequence and no ID is issued at its timestamp.
const (
	sealedBit int64 = 1 << 62
	floorBit  int64 = 1 << 61
	stateMask int64 = 1<<(TimestampBits+SequenceBits) - 1
	// freshEvery: in a fresh millisecond, IDs whose sequence+1 has none of
	// these bits set read the clock anyway (one in eight).
	freshEvery int64 = 7
)

// Generator issues IDs for one slot. It is safe for concurrent use and never
// returns the same ID twice, nor an ID whose timestamp is outside
// (Floor, Ceiling].
type Generator struct {
	state atomic.Int64
	_     [56]byte // keep the hot state word off the read-mostly line below
	// fresh is a millisecond (since Epoch) that a goroutine entered right
	// after sleeping to its start, because the one before was used up: the
	// generator is running at the format's cap. While the state is in that
	// millisecond, seven IDs in eight are issued from the state word alone,
	// because a clock read (about 25 ns on a VM) costs more than the CAS and
	// 4,096 of them a millisecond would be most of the CPU. When the burst
	// stops mid-millisecond, at most seven IDs after it can carry its last
	// millisecond; an ID is never stamped ahead of the clock. -1: none.
	fresh atomic.Int64
	// full is, with StartSpread, the last millisecond (since Epoch) that a
	// request found used up: the one after it starts at 0.
	full atomic.Int64
	// ceiling is in ms since Epoch.
	ceiling atomic.Int64
	// done counts IDs issued in milliseconds the state has moved past.
	done    atomic.Uint64
	slotBit int64 // datacenter and machine, already shifted
	slot    Slot
	maxBack int64 // MaxRollbackWait in ms
	maxLead int64 // MaxLead in ms with Logical; -1 with Refuse
	clock   Clock
	// logical counts IDs issued while the clock was behind the state (a
	// logical clock, with Logical); off the hot path.
	logical atomic.Uint64
	// spread is SequenceStart == StartSpread; entered counts the
	// milliseconds entered with it (spreadStart's k). Both it and full are
	// touched once per millisecond, not per ID, and only pick a start: a
	// stale read makes two milliseconds start alike, which repeats no ID.
	spread  bool
	entered atomic.Uint64

	// gate lets one goroutine sleep until the next millisecond while the
	// others wait on it: 64 waiting goroutines cost one sleep, not 64. It is
	// swapped with a CAS, not guarded by a mutex, because all waiters arrive
	// at once when a millisecond is used up and a contended mutex parks them
	// twice.
	gate atomic.Pointer[gate]
}

// gate is one sleep until a millisecond (since Epoch): done is closed when
// the sleeper wakes.
type gate struct {
	target int64
	done   chan struct{}
}

// NewGenerator returns a generator for cfg.
func NewGenerator(cfg Config) (*Generator, error) {
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new generator: %w", err)
	}
	g := &Generator{
		slotBit: pack(0, cfg.Slot.Datacenter, cfg.Slot.Machine, 0),
		slot:    cfg.Slot,
		maxBack: cfg.MaxRollbackWait.Milliseconds(),
		maxLead: -1,
		clock:   cfg.Clock,
		spread:  cfg.SequenceStart == StartSpread,
	}
	if cfg.OnClockBack == Logical {
		g.maxLead = cfg.MaxLead.Milliseconds()
	}
	floor := max(cfg.Floor-Epoch, 0)
	g.state.Store(floor<<SequenceBits | MaxSequence | floorBit)
	g.fresh.Store(-1)
	g.full.Store(-1)
	if cfg.Ceiling != 0 {
		g.ceiling.Store(cfg.Ceiling - Epoch)
	}
	return g, nil
}

// Slot is the generator's slot.
func (g *Generator) Slot() Slot { return g.slot }

// Next returns a new ID.
func (g *Generator) Next() (int64, error) {
	id, _, err := g.reserve(1, true)
	return id, err
}

// NextN reserves n (1..MaxBatch) IDs with consecutive sequence numbers in one
// millisecond, with a single CAS, and returns the first: the IDs are first,
// first+1, ..., first+n-1.
func (g *Generator) NextN(n int) (int64, error) {
	if n < 1 || n > MaxBatch {
		return 0, fmt.Errorf("next n: count %d is out of range 1..%d", n, MaxBatch)
	}
	id, _, err := g.reserve(int64(n), true)
	return id, err
}

// TryNextN is NextN for an event loop, which must not sleep: where NextN
// would wait for a later millisecond (this one's sequence used up, or the
// clock a few milliseconds behind), it reserves nothing and returns how
// long to wait before trying again, so that the loop serves others
// meanwhile. Otherwise it is NextN.
func (g *Generator) TryNextN(n int) (first int64, retry time.Duration, err error) {
	if n < 1 || n > MaxBatch {
		return 0, 0, fmt.Errorf("next n: count %d is out of range 1..%d", n, MaxBatch)
	}
	return g.reserve(int64(n), false)
}

// reserve is the single CAS loop behind Next, NextN and TryNextN; without
// wait it returns retry > 0 instead of sleeping.
func (g *Generator) reserve(n int64, wait bool) (first int64, retry time.Duration, err error) {
	slept := false
	for {
		old := g.state.Load()
		last := old & stateMask >> SequenceBits
		seq := old & MaxSequence
		if n == 1 && (seq+1)&freshEvery != 0 && old&(sealedBit|floorBit) == 0 && seq < MaxSequence && g.fresh.Load() == last {
			if g.state.CompareAndSwap(old, old+n) {
				return g.id(old + 1), 0, nil
			}
			continue
		}
		if old&sealedBit != 0 {
			return 0, 0, ErrSealed
		}
		nowNs := g.clock.UnixNano() - Epoch*int64(time.Millisecond)
		now := nowNs / int64(time.Millisecond)
		var next int64
		switch {
		case now > last:
			if ceil := g.ceiling.Load(); now > ceil {
				return 0, 0, &CeilingError{NowMs: now + Epoch, CeilingMs: ceil + Epoch}
			}
			next = now << SequenceBits
			if g.spread && g.full.Load() != last {
				// After a millisecond that a request found used up, the
				// next starts at 0: at full load every millisecond holds
				// all 4,096.
				next |= spreadStart(g.entered.Load(), n)
			}
			next += n - 1
		case now < last && g.maxLead >= 0:
			// Logical: the clock is behind; go on from the state, within
			// the lead bound and the ceiling. Off the hot path: a clock
			// that is right never comes here.
			var err error
			if next, err = g.logicalNext(old, n, now, nowNs); err != nil {
				return 0, 0, err
			}
			if !g.state.CompareAndSwap(old, next) {
				continue
			}
			g.logical.Add(uint64(n))
			if next>>SequenceBits != last && old&floorBit == 0 {
				g.done.Add(uint64(seq + 1))
			}
			return g.id(next - (n - 1)), 0, nil
		case last-now > g.maxBack:
			return 0, 0, &RollbackError{Behind: time.Duration(last*int64(time.Millisecond) - nowNs)}
		case old&floorBit == 0 && seq+n <= MaxSequence:
			next = old + n
		default:
			// This millisecond is used up (or is the floor): sleep, do not
			// spin, until the clock reaches the next one.
			if g.spread && g.full.Load() != last {
				g.full.Store(last)
			}
			if !wait {
				return 0, max(time.Duration((last+1)*int64(time.Millisecond)-nowNs), 1), nil
			}
			g.waitUntil(last+1, nowNs)
			slept = true
			continue
		}
		if !g.state.CompareAndSwap(old, next) {
			continue
		}
		if next>>SequenceBits == last {
			return g.id(old + 1), 0, nil
		}
		// done counts from sequence 0: a millisecond started at s is
		// counted s short now, so that done plus its sequence+1 is right.
		start := next&MaxSequence - (n - 1)
		d := -start
		if old&floorBit == 0 {
			d += seq + 1
		}
		if d != 0 {
			g.done.Add(uint64(d))
		}
		if g.spread {
			g.entered.Add(1)
		}
		if slept {
			g.fresh.Store(now)
		}
		return g.id(next - (n - 1)), 0, nil
	}
}

// logicalNext is the state after reserving n IDs on a logical clock, the
// clock (now, in ms since Epoch) being behind the state old: the rest of
// the state's millisecond, or the next one when the run does not fit;
// never more than maxLead ahead of the clock nor above the ceiling.
func (g *Generator) logicalNext(old, n, now, nowNs int64) (int64, error) {
	last := old & stateMask >> SequenceBits
	if old&floorBit == 0 && old&MaxSequence+n <= MaxSequence {
		return old + n, nil // the same millisecond: no further ahead
	}
	ms := last + 1
	if ms-now > g.maxLead {
		return 0, &RollbackError{Behind: time.Duration(last*int64(time.Millisecond) - nowNs), MaxLead: time.Duration(g.maxLead) * time.Millisecond}
	}
	if ceil := g.ceiling.Load(); ms > ceil {
		return 0, &RollbackError{Behind: time.Duration(last*int64(time.Millisecond) - nowNs), CeilingMs: ceil + Epoch}
	}
	return ms<<SequenceBits | (n - 1), nil
}

// id turns a state value (timestamp<<SequenceBits | sequence) into an ID.
func (g *Generator) id(s int64) int64 {
	return s>>SequenceBits<<timestampShift | g.slotBit | s&MaxSequence
}

// waitUntil returns once the clock has reached ms (since Epoch). The first
// goroutine to wait for a millisecond sleeps; later ones wait on it. A gate
// whose sleep is over stays in place (its done closed) until the next
// sleeper replaces it.
func (g *Generator) waitUntil(ms, nowNs int64) {
	for {
		cur := g.gate.Load()
		if cur != nil && cur.target >= ms {
			select {
			case <-cur.done:
				// That sleep is over, yet the clock is still short of ms
				// (it was stepped back, or slept short): sleep again.
			default:
				<-cur.done
				return
			}
		}
		next := &gate{target: ms, done: make(chan struct{})}
		if g.gate.CompareAndSwap(cur, next) {
			g.clock.Sleep(time.Duration(ms*int64(time.Millisecond) - nowNs))
			close(next.done)
			return
		}
	}
}

// SetCeiling raises the highest Unix ms timestamp the generator may issue.
// A lower value than the current ceiling is ignored: the ceiling only moves
// up, after the coordinator confirmed a reservation.
func (g *Generator) SetCeiling(unixMs int64) {
	c := unixMs - Epoch
	for {
		old := g.ceiling.Load()
		if c <= old || g.ceiling.CompareAndSwap(old, c) {
			return
		}
	}
}

// Ceiling is the highest Unix ms timestamp the generator may issue.
func (g *Generator) Ceiling() int64 { return g.ceiling.Load() + Epoch }

// SetFloor raises the floor: no ID is issued at or below unixMs afterwards.
// It never lowers the last issued timestamp.
func (g *Generator) SetFloor(unixMs int64) {
	f := unixMs - Epoch
	for {
		old := g.state.Load()
		if f <= old&stateMask>>SequenceBits {
			return
		}
		next := old&sealedBit | floorBit | f<<SequenceBits | MaxSequence
		if g.state.CompareAndSwap(old, next) {
			if old&floorBit == 0 {
				g.done.Add(uint64(old&MaxSequence + 1))
			}
			return
		}
	}
}

// Seal stops the generator with one CAS: every later call fails with
// ErrSealed. It returns the last issued Unix ms timestamp (the floor if none
// was issued), the highest timestamp this generator can ever have used.
func (g *Generator) Seal() int64 {
	for {
		old := g.state.Load()
		if old&sealedBit != 0 || g.state.CompareAndSwap(old, old|sealedBit) {
			return old&stateMask>>SequenceBits + Epoch
		}
	}
}

// Sealed reports whether Seal was called.
func (g *Generator) Sealed() bool { return g.state.Load()&sealedBit != 0 }

// LastMs is the last issued Unix ms timestamp, or the floor (at least Epoch)
// if none was issued yet.
func (g *Generator) LastMs() int64 { return g.state.Load()&stateMask>>SequenceBits + Epoch }

// LogicalIssued is the number of IDs issued on a logical clock (Logical,
// while the clock was behind the last issued timestamp).
func (g *Generator) LogicalIssued() uint64 { return g.logical.Load() }

// LeadMs is how far, in ms, the last issued timestamp is ahead of the
// clock now: above 0 while a logical clock runs ahead (or the clock was
// stepped back), 0 otherwise.
func (g *Generator) LeadMs() int64 {
	return max(g.LastMs()-g.clock.UnixNano()/int64(time.Millisecond), 0)
}

// Issued is the number of IDs issued so far.
func (g *Generator) Issued() uint64 {
	s := g.state.Load()
	n := g.done.Load()
	if s&floorBit == 0 {
		n += uint64(s&MaxSequence + 1)
	}
	return n
}

// LowerCeiling lowers the ceiling to unixMs, never below the last issued
// timestamp (nor the floor), and returns the ceiling now in force, in Unix
// ms. It is the first step of shortening a reservation: the generator stops
// short of the lower value before ZooKeeper is told it, so an answer lost
// on the way leaves the higher value stored, which is safe. A value at or
// above the current ceiling changes nothing. Not to be called concurrently
// with SetCeiling (the coordinator calls both from its renew loop).
//
// A call issuing IDs may have read the old ceiling just before: so that it
// cannot then issue above the new one, LowerCeiling also moves the state
// word with one CAS, which makes that call's CAS fail and read the ceiling
// again. The move marks the last issued millisecond as used up (its
// remaining sequence numbers are skipped; a state with nothing issued since
// its floor moves one millisecond up), so the state never takes a value it
// had before and no CAS can succeed on a stale one.
func (g *Generator) LowerCeiling(unixMs int64) int64 {
	want := unixMs - Epoch
	for {
		old := g.state.Load()
		cur := g.ceiling.Load()
		if old&sealedBit != 0 {
			return cur + Epoch // nothing is issued any more
		}
		last := old & stateMask >> SequenceBits
		if old&floorBit != 0 {
			last++ // the floor's millisecond is never issued; move past it
		}
		c := max(want, last)
		if c >= cur {
			return cur + Epoch
		}
		g.ceiling.Store(c)
		next := floorBit | last<<SequenceBits | MaxSequence
		if g.state.CompareAndSwap(old, next) {
			if old&floorBit == 0 {
				g.done.Add(uint64(old&MaxSequence + 1))
			}
			return c + Epoch
		}
		// An ID was issued meanwhile (under the old ceiling, or the new
		// one): put the ceiling back and look again.
		g.ceiling.Store(cur)
	}
}
