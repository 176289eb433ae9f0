//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/redis/go-redis/v9"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/snowflake"
)

// workerStatus is the part of a worker's /status the checks read.
type workerStatus struct {
	State     string `json:"state"`
	Slot      string `json:"slot"`
	LeaseNode string `json:"lease_node"`
	FloorMs   int64  `json:"floor_ms"`
	CeilingMs int64  `json:"ceiling_ms"`
	Ready     bool   `json:"ready"`
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
}

// Check verifies the invariants over every ID collected so far and the
// fleet's state in ZooKeeper and in the workers.
func Check(ctx context.Context, st *Stack, col *Collector) Verdict {
	ids, violations, bad := col.IDs()
	v := Verdict{IDs: len(ids), Violations: violations, Bad: bad}
	var dupExamples []string
	var maxTs map[snowflake.Slot]int64
	v.Duplicates, dupExamples, maxTs = duplicates(ids)
	if len(dupExamples) > 0 {
		v.Problems = append(v.Problems, "duplicates, e.g. "+strings.Join(dupExamples, ", "))
	}
	v.Problems = append(v.Problems, checkLeases(ctx, st, maxTs)...)
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

// checkLeases: at most one lease holder per slot, every serving worker is
// the holder ZooKeeper names for its slot and serves below the slot's stored
// reservation, and no ID collected lies above its slot's reservation (a
// holder issues only timestamps it confirmed; reservations never go down).
func checkLeases(ctx context.Context, st *Stack, maxTs map[snowflake.Slot]int64) []string {
	// Statuses first, the slot map after: a ceiling seen here was confirmed
	// before the reservation read below, which can only have grown since.
	type seen struct {
		w Container
		s workerStatus
	}
	var statuses []seen
	ws, err := st.Workers(ctx)
	if err != nil {
		return []string{err.Error()}
	}
	for _, w := range ws {
		if !w.Running || w.Paused {
			continue
		}
		if s, err := getStatus(ctx, w); err == nil && s.State == coordinator.StateServing {
			statuses = append(statuses, seen{w, s})
		}
	}
	var problems []string
	conn, err := st.DialZK(ctx)
	if err != nil {
		return []string{"dial ZooKeeper: " + err.Error()}
	}
	defer conn.Close()
	var sm coordinator.SlotMap
	var names []string
	for try := 0; ; try++ {
		sm, err = coordinator.ReadSlotMap(conn, zkRoot)
		if err == nil {
			names, _, err = conn.Children(coordinator.LeasesPath(zkRoot))
		}
		if err == nil || try == 20 {
			break
		}
		_ = sleep(ctx, 250*time.Millisecond)
	}
	if err != nil {
		return []string{"read the slot map: " + err.Error()}
	}
	holders := map[snowflake.Slot]coordinator.LeaseInfo{}
	for _, l := range sm.Leases {
		if prev, ok := holders[l.Slot]; ok {
			problems = append(problems, fmt.Sprintf("slot %s held twice: %s and %s", l.Slot, prev.Node, l.Node))
		}
		holders[l.Slot] = l
	}
	// The raw children: a slot may briefly have a contender's node, but its
	// holder is the lowest sequence, and ReadSlotMap must agree.
	lowest := map[snowflake.Slot]string{}
	lowSeq := map[snowflake.Slot]int64{}
	for _, n := range names {
		s, seq, err := coordinator.ParseLeaseName(n)
		if err != nil {
			problems = append(problems, fmt.Sprintf("lease node %q: %v", n, err))
			continue
		}
		if cur, ok := lowSeq[s]; !ok || coordinator.LeaseSeqBefore(seq, cur) {
			lowSeq[s], lowest[s] = seq, n
		}
	}
	for s, n := range lowest {
		if holders[s].Node != n && !isPlaceholder(conn, n) {
			problems = append(problems, fmt.Sprintf("slot %s: lowest node %s but ReadSlotMap says %q", s, n, holders[s].Node))
		}
	}
	for s, ms := range maxTs {
		rec, ok := sm.Slots[s]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("slot %s issued IDs but has no slot node", s))
		case ms > rec.ReservedUntilMs:
			problems = append(problems, fmt.Sprintf("slot %s issued ms %d above its reservation %d", s, ms, rec.ReservedUntilMs))
		}
	}
	serving := map[string]string{} // slot -> worker
	for _, x := range statuses {
		w, s := x.w, x.s
		if other, ok := serving[s.Slot]; ok {
			problems = append(problems, fmt.Sprintf("slot %s served by %s and %s", s.Slot, other, w.Short()))
		}
		serving[s.Slot] = w.Short()
		slot, err := snowflake.ParseSlot(s.Slot)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s reports slot %q: %v", w.Short(), s.Slot, err))
			continue
		}
		if h := holders[slot]; h.Node != s.LeaseNode {
			problems = append(problems, fmt.Sprintf("%s serves %s with lease %s, ZooKeeper's holder is %q", w.Short(), s.Slot, s.LeaseNode, h.Node))
		}
		if rec := sm.Slots[slot]; s.CeilingMs > rec.ReservedUntilMs {
			problems = append(problems, fmt.Sprintf("%s ceiling %d above the stored reservation %d of %s", w.Short(), s.CeilingMs, rec.ReservedUntilMs, s.Slot))
		}
	}
	return problems
}

func isPlaceholder(conn *zk.Conn, name string) bool {
	data, _, err := conn.Get(path.Join(coordinator.LeasesPath(zkRoot), name))
	return err == nil && strings.Contains(string(data), placeholderHost)
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
