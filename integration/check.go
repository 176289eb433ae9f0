//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// workerStatus is the part of a worker's /status the checks read.
type workerStatus struct {
	State     string `json:"state"`
	Slot      string `json:"slot"`
	LeaseNode string `json:"lease_node"`
	FloorMs   int64  `json:"floor_ms"`
	CeilingMs int64  `json:"ceiling_ms"`
	LastMs    int64  `json:"last_issued_ms"`
	SkewMs    int64  `json:"skew_ms"`
	SessionID int64  `json:"session_id"`
	Ready     bool   `json:"ready"`
	// LeadMs and LogicalIssued: the logical clock riding out a step back.
	LeadMs        int64 `json:"lead_ms"`
	LogicalIssued int64 `json:"logical_issued"`
}

// holds reports whether the status names a lease with a generator on it:
// such a worker may issue IDs (a disconnected one too, up to its ceiling).
func (s workerStatus) holds() bool {
	return s.LeaseNode != "" && s.CeilingMs > 0 && s.CeilingMs >= s.FloorMs
}

func getStatus(ctx context.Context, c Container) (workerStatus, error) {
	var st workerStatus
	if c.Addr("7610") == "" {
		return st, fmt.Errorf("%s: admin port not published", c.Short())
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Addr("7610")+"/status", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return st, fmt.Errorf("%s /status: %w", c.Short(), err)
	}
	return st, nil
}

// serves reports whether a worker hands out an ID on a fresh connection.
func serves(ctx context.Context, addr string) error {
	rdb := newRedis(addr)
	defer rdb.Close()
	_, err := rdb.Do(ctx, "NEXTID").Int64()
	return err
}

// newRedis is a go-redis client of one worker, as the suite uses it: RESP2,
// one connection, no retries of its own (a failure is what we count), 1 s
// bounds on every step.
func newRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, PoolSize: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
}

// WaitServing waits until exactly want worker containers run and every one
// serves IDs and reports ready, and returns how long that took.
func WaitServing(ctx context.Context, st *Stack, want int, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	var why string
	for time.Since(start) < limit {
		why = ""
		ws, err := st.Workers(ctx)
		if err != nil {
			why = err.Error()
		}
		running := 0
		for _, w := range ws {
			if !w.Running || w.Paused {
				continue
			}
			running++
			if why != "" {
				continue
			}
			if err := serves(ctx, w.Addr("7609")); err != nil {
				why = fmt.Sprintf("%s: %v", w.Short(), err)
			} else if s, err := getStatus(ctx, w); err != nil || !s.Ready {
				why = fmt.Sprintf("%s: not ready (%+v, %v)", w.Short(), s, err)
			}
		}
		if why == "" && running != want {
			why = fmt.Sprintf("%d workers running, want %d", running, want)
		}
		if why == "" {
			return time.Since(start), nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return 0, err
		}
	}
	return time.Since(start), fmt.Errorf("fleet not serving after %v: %s", limit, why)
}

// Verdict is what one check found.
type Verdict struct {
	IDs        int // all IDs so far
	Duplicates int // IDs seen more than once (each extra copy counts)
	Violations []string
	Bad        []string
	Problems   []string // lease and ceiling invariants
	Ceilings   ceilingCount
}

// checkInput is everything Evaluate judges, gathered by Check from the
// collector, the monitor, the workers and ZooKeeper (or made by a test).
type checkInput struct {
	ids             []int64
	violations, bad []string
	streams         []*stream           // for the ceiling check, with their arrival times
	samples         map[string][]sample // the monitor's polls, by container ID
	names           map[string]string   // container ID -> worker_N, for messages
	until           time.Time           // check only IDs received before this
	statuses        []holding           // every running worker, now
	unreachable     []string            // running workers whose /status failed, now
	leases          []string            // leases/ as ZooKeeper lists it, now
	slots           map[snowflake.Slot]tree.SlotRecord
}

// Check gathers the collector's IDs, the monitor's ceilings, the workers'
// statuses and ZooKeeper's lease nodes and slot nodes, at a calm point, and
// evaluates them.
func Check(ctx context.Context, st *Stack, col *Collector, mon *Monitor, until time.Time) Verdict {
	in := checkInput{until: until, names: map[string]string{}}
	in.ids, in.violations, in.bad = col.IDs()
	col.mu.Lock()
	in.streams = slices.Clone(col.streams)
	col.mu.Unlock()
	in.samples = mon.Samples()
	var problems []string
	ws, err := st.Workers(ctx)
	if err != nil {
		problems = append(problems, err.Error())
	}
	// Statuses first, ZooKeeper after: a ceiling seen here was confirmed
	// before the reservation read below, which can only have grown since.
	for _, w := range ws {
		in.names[w.ID] = w.Short()
		if !w.Running || w.Paused {
			continue
		}
		if s, err := getStatus(ctx, w); err != nil {
			in.unreachable = append(in.unreachable, fmt.Sprintf("%s: %v", w.Short(), err))
		} else {
			in.statuses = append(in.statuses, holding{worker: w.Short(), st: s})
		}
	}
	for id, n := range mon.names {
		if in.names[id] == "" {
			in.names[id] = n
		}
	}
	conn, err := st.DialZK(ctx)
	if err != nil {
		return Verdict{Problems: append(problems, "dial ZooKeeper: "+err.Error())}
	}
	defer conn.Close()
	var sm tree.SlotMap
	for try := 0; ; try++ {
		sm, err = tree.ReadSlotMap(conn, zkRoot)
		if err == nil {
			in.slots = sm.Slots
			in.leases, _, err = conn.Children(zklayout.LeasesPath(zkRoot))
		}
		if err == nil || try == 20 {
			break
		}
		_ = sleep(ctx, 250*time.Millisecond)
	}
	if err != nil {
		return Verdict{Problems: append(problems, "read the slot map: "+err.Error())}
	}
	for sl, why := range sm.Damaged {
		problems = append(problems, fmt.Sprintf("slot node %s holds no slot record: %s", sl, why))
	}
	v := Evaluate(in)
	v.Problems = append(problems, v.Problems...)
	return v
}

// Evaluate judges the gathered facts: duplicates; every ID at or below the
// ceiling its holder had confirmed when the ID was received, and at or
// below its slot's stored reservation; the holders the workers report
// against the lease nodes ZooKeeper lists and against each other; each
// worker's ceiling at or below its slot's stored reservation.
func Evaluate(in checkInput) Verdict {
	v := Verdict{IDs: len(in.ids), Violations: in.violations, Bad: in.bad}
	var dupExamples []string
	var maxTs map[snowflake.Slot]int64
	v.Duplicates, dupExamples, maxTs = duplicates(in.ids)
	if len(dupExamples) > 0 {
		v.Problems = append(v.Problems, "duplicates, e.g. "+strings.Join(dupExamples, ", "))
	}
	var cp []string
	v.Ceilings, cp = checkCeilings(in.streams, in.samples, in.names, in.until)
	v.Problems = append(v.Problems, cp...)
	for _, u := range in.unreachable {
		v.Problems = append(v.Problems, "a running worker's /status failed: "+u)
	}
	v.Problems = append(v.Problems, holderProblems(in.leases, in.statuses)...)
	v.Problems = append(v.Problems, overlapProblems(in.statuses)...)
	listed := map[string]bool{}
	for _, n := range in.leases {
		listed[n] = true
	}
	for _, h := range in.statuses {
		if h.st.State == coordinator.StateServing && !listed[h.st.LeaseNode] {
			v.Problems = append(v.Problems, fmt.Sprintf("%s serves %s with lease %s, which ZooKeeper does not list", h.worker, h.st.Slot, h.st.LeaseNode))
		}
		if !h.st.holds() {
			continue
		}
		slot, err := snowflake.ParseSlot(h.st.Slot)
		if err != nil {
			v.Problems = append(v.Problems, fmt.Sprintf("%s reports slot %q: %v", h.worker, h.st.Slot, err))
			continue
		}
		if rec, ok := in.slots[slot]; !ok || h.st.CeilingMs > rec.ReservedUntilMs {
			v.Problems = append(v.Problems, fmt.Sprintf("%s ceiling %d above the stored reservation %d of %s", h.worker, h.st.CeilingMs, rec.ReservedUntilMs, h.st.Slot))
		}
	}
	for s, ms := range maxTs {
		rec, ok := in.slots[s]
		switch {
		case !ok:
			v.Problems = append(v.Problems, fmt.Sprintf("slot %s issued IDs but has no slot node", s))
		case ms > rec.ReservedUntilMs:
			v.Problems = append(v.Problems, fmt.Sprintf("slot %s issued ms %d above its stored reservation %d", s, ms, rec.ReservedUntilMs))
		}
	}
	return v
}

// duplicates sorts ids and counts the extra copies (with a few examples);
// it also returns the highest timestamp seen per slot.
func duplicates(ids []int64) (n int, examples []string, maxTs map[snowflake.Slot]int64) {
	slices.Sort(ids)
	maxTs = map[snowflake.Slot]int64{}
	for i, id := range ids {
		if i > 0 && ids[i-1] == id {
			n++
			if len(examples) < 5 {
				f, _ := snowflake.Decode(id)
				examples = append(examples, fmt.Sprintf("%d (%s, ms %d, seq %d)", id, f.Slot(), f.UnixMs, f.Sequence))
			}
		}
		if f, err := snowflake.Decode(id); err == nil && f.UnixMs > maxTs[f.Slot()] {
			maxTs[f.Slot()] = f.UnixMs
		}
	}
	return n, examples, maxTs
}

// holding is one worker's status, named.
type holding struct {
	worker string
	st     workerStatus
}

// holderProblems compares the holders the workers report with the lease
// nodes as ZooKeeper lists them (names, not a map keyed by slot): a worker
// that holds a lease node ZooKeeper lists must hold the lowest sequence
// listed for its slot. A lower node listed now was created before the
// worker's, so it existed when the worker claimed: two holders, whatever
// the timing of the two reads.
func holderProblems(leases []string, hs []holding) []string {
	type node struct {
		name string
		seq  int64
	}
	var problems []string
	bySlot := map[string][]node{}
	listed := map[string]string{} // name -> slot
	for _, n := range leases {
		s, seq, err := zklayout.ParseLeaseName(n)
		if err != nil {
			problems = append(problems, fmt.Sprintf("lease node %q: %v", n, err))
			continue
		}
		bySlot[s.String()] = append(bySlot[s.String()], node{n, seq})
		listed[n] = s.String()
	}
	owner := map[string]string{} // lease node -> worker
	for _, h := range hs {
		if !h.st.holds() {
			continue
		}
		if slot, ok := listed[h.st.LeaseNode]; ok && slot != h.st.Slot {
			problems = append(problems, fmt.Sprintf("%s reports slot %s for lease node %s, which is a node of %s", h.worker, h.st.Slot, h.st.LeaseNode, slot))
			continue
		}
		if other, ok := owner[h.st.LeaseNode]; ok {
			problems = append(problems, fmt.Sprintf("lease node %s held by %s and %s", h.st.LeaseNode, other, h.worker))
		}
		owner[h.st.LeaseNode] = h.worker
		if _, ok := listed[h.st.LeaseNode]; !ok {
			continue // lost, or not yet seen by this listing: overlapProblems covers it
		}
		_, mine, _ := zklayout.ParseLeaseName(h.st.LeaseNode)
		for _, n := range bySlot[h.st.Slot] {
			if zklayout.LeaseSeqBefore(n.seq, mine) {
				who := owner[n.name]
				for _, o := range hs {
					if o.st.LeaseNode == n.name {
						who = o.worker
					}
				}
				if who == "" {
					who = "no worker polled"
				}
				problems = append(problems, fmt.Sprintf("two holders of %s: ZooKeeper lists %s (%s) before %s, yet %s holds the later one (state %s)",
					h.st.Slot, n.name, who, h.st.LeaseNode, h.worker, h.st.State))
			}
		}
	}
	return problems
}

// overlapProblems: two workers that report holding one slot under
// different lease nodes (a zombie that has not yet noticed, and its
// successor) must hold disjoint timestamp ranges: the later lease's floor
// at or above the earlier one's ceiling. Ceilings only grow and a floor is
// fixed, so statuses read at different moments compare as well as
// simultaneous ones.
func overlapProblems(hs []holding) []string {
	var problems []string
	for i, a := range hs {
		for _, b := range hs[i+1:] {
			if !a.st.holds() || !b.st.holds() || a.st.Slot != b.st.Slot {
				continue
			}
			if a.st.LeaseNode == b.st.LeaseNode {
				problems = append(problems, fmt.Sprintf("%s and %s both hold %s with lease node %s", a.worker, b.worker, a.st.Slot, a.st.LeaseNode))
				continue
			}
			_, sa, _ := zklayout.ParseLeaseName(a.st.LeaseNode)
			_, sb, _ := zklayout.ParseLeaseName(b.st.LeaseNode)
			early, late := a, b
			if sb < sa {
				early, late = b, a
			}
			if late.st.FloorMs < early.st.CeilingMs {
				problems = append(problems, fmt.Sprintf("two holders of %s at once: %s (%s, %s, ceiling %d) and %s (%s, %s, floor %d) overlap",
					a.st.Slot, early.worker, early.st.LeaseNode, early.st.State, early.st.CeilingMs, late.worker, late.st.LeaseNode, late.st.State, late.st.FloorMs))
			}
		}
	}
	return problems
}

// ceilingCount is how many IDs were checked against a ceiling polled from
// their holder, and how many could not be (no poll of the slot before).
type ceilingCount struct{ Checked, Unchecked int }

// ceilingIndex answers: what ceiling had the holder of a slot confirmed
// when an ID was received?
type ceilingIndex struct {
	samples map[string][]sample // container ID -> polls in time order
	bySlot  map[string][]string // slot -> containers that ever reported it
	span    map[[2]string][2]time.Time
	memo    map[[3]string]int64 // (container, slot, lease) -> fallback bound
}

func newCeilingIndex(samples map[string][]sample) *ceilingIndex {
	ci := &ceilingIndex{samples: samples, bySlot: map[string][]string{}, span: map[[2]string][2]time.Time{}, memo: map[[3]string]int64{}}
	for id, ss := range samples {
		for _, s := range ss {
			if !s.holds() {
				continue
			}
			k := [2]string{id, s.Slot}
			sp, ok := ci.span[k]
			if !ok {
				ci.bySlot[s.Slot] = append(ci.bySlot[s.Slot], id)
				sp[0] = s.at
			}
			sp[1] = s.at
			ci.span[k] = sp
		}
	}
	return ci
}

// freshPoll: a poll taken this soon after an ID arrived bounds it by its
// own ceiling; later polls may belong to a later lease.
const freshPoll = 3 * time.Second

// bound is the ceiling container id had confirmed for slot when an ID
// arrived at t: the ceiling of its first poll sent after t (the ceiling
// only grows, so it is at least the one the ID was issued under). Without
// such a poll (the container died, paused or lost the lease right after),
// the highest ceiling it ever reported for the lease it held before t or a
// later one of its own on the slot, or a successor's floor, whichever is
// higher. ok is false without any poll of the slot before t.
func (ci *ceilingIndex) bound(id, slot string, t time.Time) (int64, bool) {
	ss := ci.samples[id]
	i := sort.Search(len(ss), func(i int) bool { return ss[i].at.After(t) })
	if i < len(ss) && ss[i].Slot == slot && ss[i].holds() && ss[i].at.Sub(t) < freshPoll {
		return ss[i].CeilingMs, true
	}
	var lease string
	for k := i - 1; k >= 0; k-- {
		if ss[k].Slot == slot && ss[k].holds() {
			lease = ss[k].LeaseNode
			break
		}
	}
	if lease == "" {
		return 0, false
	}
	if c, ok := ci.memo[[3]string{id, slot, lease}]; ok {
		return c, true
	}
	_, seq, _ := zklayout.ParseLeaseName(lease)
	var c int64
	for _, s := range ss {
		if _, q, _ := zklayout.ParseLeaseName(s.LeaseNode); s.Slot == slot && s.holds() && q >= seq {
			c = max(c, s.CeilingMs)
		}
	}
	for _, other := range ci.bySlot[slot] {
		if other == id {
			continue
		}
		for _, s := range ci.samples[other] {
			if _, q, _ := zklayout.ParseLeaseName(s.LeaseNode); s.Slot == slot && s.holds() && q > seq && s.FloorMs >= c {
				c = s.FloorMs // floors of later leases all lie at or above the ceiling
				break
			}
		}
	}
	ci.memo[[3]string{id, slot, lease}] = c
	return c, true
}

// slotBound is bound over every container that held the slot: for the Go
// client's streams, which do not say which worker answered.
func (ci *ceilingIndex) slotBound(slot string, t time.Time) (int64, bool) {
	var c int64
	var ok bool
	for _, id := range ci.bySlot[slot] {
		// Only containers that held the slot around t: an old holder's
		// bound is lower than the current one's anyway.
		if sp := ci.span[[2]string{id, slot}]; sp[0].After(t.Add(freshPoll)) || sp[1].Before(t.Add(-freshPoll)) {
			continue
		}
		if b, k := ci.bound(id, slot, t); k {
			c, ok = max(c, b), true
		}
	}
	return c, ok
}

// checkCeilings checks every ID received before until (and not checked by
// an earlier call) against the ceiling polled from its holder.
func checkCeilings(streams []*stream, samples map[string][]sample, names map[string]string, until time.Time) (ceilingCount, []string) {
	ci := newCeilingIndex(samples)
	var n ceilingCount
	var problems []string
	for _, s := range streams {
		s.mu.Lock()
		start := 0
		if s.checked > 0 {
			start = s.batches[s.checked-1].end
		}
		for ; s.checked < len(s.batches) && s.batches[s.checked].at.Before(until); s.checked++ {
			b := s.batches[s.checked]
			bounds := map[string]int64{}
			for _, id := range s.ids[start:b.end] {
				f, err := snowflake.Decode(id)
				if err != nil {
					continue
				}
				slot := f.Slot().String()
				c, ok := bounds[slot]
				if !ok {
					var found bool
					if s.container != "" {
						c, found = ci.bound(s.container, slot, b.at)
					} else {
						c, found = ci.slotBound(slot, b.at)
					}
					if !found {
						c = -1
					}
					bounds[slot] = c
				}
				switch {
				case c < 0:
					n.Unchecked++
				case f.UnixMs > c:
					n.Checked++
					if len(problems) < 10 {
						from := s.name
						if s.container != "" && names[s.container] != "" {
							from = names[s.container]
						}
						problems = append(problems, fmt.Sprintf("%s: ID %d of %s (ms %d) received at %s above the ceiling %d its holder had confirmed by then",
							from, id, slot, f.UnixMs, b.at.Format("15:04:05.000"), c))
					}
				default:
					n.Checked++
				}
			}
			start = b.end
		}
		s.mu.Unlock()
	}
	return n, problems
}

// handover checks one slot passing from an old holder to a successor: the
// old holder's IDs at or below the floor the successor started from, the
// successor's strictly above; both sides must have IDs to compare.
func handover(old, successor string, oldIDs, newIDs []int64, slot string, floor int64) (note string, problems []string) {
	_, oldHi, oldN := slotRange(oldIDs, slot)
	newLo, _, newN := slotRange(newIDs, slot)
	if floor == 0 {
		problems = append(problems, fmt.Sprintf("successor %s reports no floor on %s", successor, slot))
	}
	if oldN == 0 {
		problems = append(problems, fmt.Sprintf("old holder %s served no ID on %s: the hand-over is not shown", old, slot))
	} else if oldHi > floor {
		problems = append(problems, fmt.Sprintf("old holder %s served ms %d on %s, above its successor's floor %d", old, oldHi, slot, floor))
	}
	if newN == 0 {
		problems = append(problems, fmt.Sprintf("successor %s served no ID on %s: the hand-over is not shown", successor, slot))
	} else if newLo <= floor {
		problems = append(problems, fmt.Sprintf("successor %s served ms %d on %s, not above its floor %d", successor, newLo, slot, floor))
	}
	return fmt.Sprintf("old holder's last ms %d ≤ floor %d < successor's first %d (%d and %d IDs)", oldHi, floor, newLo, oldN, newN), problems
}

// slotRange is the lowest and highest timestamp (Unix ms) among the IDs of
// one slot, and how many there were.
func slotRange(ids []int64, slot string) (lo, hi int64, n int) {
	for _, id := range ids {
		f, err := snowflake.Decode(id)
		if err != nil || f.Slot().String() != slot {
			continue
		}
		if n == 0 || f.UnixMs < lo {
			lo = f.UnixMs
		}
		hi = max(hi, f.UnixMs)
		n++
	}
	return lo, hi, n
}
