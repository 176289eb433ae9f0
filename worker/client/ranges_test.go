package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/snowflake"
)

func TestConnRangeFraming(t *testing.T) {
	id, _ := snowflake.Encode(snowflake.Fields{UnixMs: time.Now().UnixMilli(), Datacenter: 3, Machine: 4, Sequence: 10})
	addr, got := scriptedPeer(t, fmt.Sprintf("*2\r\n:%d\r\n:5\r\n", id))
	c := dialT(t, addr)
	c.wantSlot = int32(snowflake.Slot{Datacenter: 3, Machine: 4}.Index())
	first, err := c.NextRange(5)
	if err != nil || first != id {
		t.Fatalf("NextRange(5) = %d, %v; want %d", first, err, id)
	}
	if r := <-got; r != "*2\r\n$9\r\nNEXTRANGE\r\n$1\r\n5\r\n" {
		t.Errorf("NEXTRANGE 5 sent as %q", r)
	}
}

// A NEXTRANGE reply is checked as a NEXTIDS reply is: a count other than
// asked, an ID that is not positive, a run whose sequence would carry into
// the next millisecond (IDs nobody issued), the wrong reply type.
func TestConnRangeRejectsBrokenPromises(t *testing.T) {
	for _, tc := range []struct{ name, reply string }{
		{"count", "*2\r\n:4096\r\n:4\r\n"},
		{"zero first", "*2\r\n:0\r\n:5\r\n"},
		{"negative first", "*2\r\n:-4096\r\n:5\r\n"},
		{"past the millisecond", "*2\r\n:8190\r\n:5\r\n"}, // sequence 4094: 4094..4098
		{"three elements", "*3\r\n:4096\r\n:5\r\n:1\r\n"},
		{"string first", "*2\r\n+4096\r\n:5\r\n"},
		{"string count", "*2\r\n:4096\r\n$1\r\n5\r\n"},
		{"an integer", ":4096\r\n"},
		{"an array of IDs", "*5\r\n:4096\r\n:4097\r\n:4098\r\n:4099\r\n:4100\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := scriptedPeer(t, tc.reply)
			c := dialT(t, addr)
			_, err := c.NextRange(5)
			var pe *ProtocolError
			if !errors.As(err, &pe) || !c.Broken() {
				t.Fatalf("reply %q: error %v (broken %v), want a *ProtocolError and the connection broken", tc.reply, err, c.Broken())
			}
		})
	}
	// The largest run that fits: sequence 4091..4095.
	addr, _ := scriptedPeer(t, "*2\r\n:8187\r\n:5\r\n")
	if first, err := dialT(t, addr).NextRange(5); err != nil || first != 8187 {
		t.Fatalf("a run ending at sequence 4095: %d, %v", first, err)
	}
}

// The slot check holds for ranges: a run of another slot than the lease
// node names is a *SlotError.
func TestConnRangeSlotChecked(t *testing.T) {
	want, other := snowflake.Slot{Datacenter: 1, Machine: 1}, snowflake.Slot{Datacenter: 1, Machine: 2}
	id, _ := snowflake.Encode(snowflake.Fields{UnixMs: time.Now().UnixMilli(), Datacenter: other.Datacenter, Machine: other.Machine})
	addr, _ := scriptedPeer(t, fmt.Sprintf("*2\r\n:%d\r\n:100\r\n", id))
	c := dialT(t, addr)
	c.wantSlot = int32(want.Index())
	_, err := c.run(100)
	var se *SlotError
	if !errors.As(err, &se) || se.Want != want || se.Got != other || !c.Broken() {
		t.Fatalf("a run of slot %s from a worker of %s: %v", other, want, err)
	}
}

// A worker older than NEXTRANGE answers "unknown command": the Conn asks
// again with NEXTIDS on the same connection, and asks NEXTIDS from then on;
// the run must then be consecutive.
func TestConnRunFallsBackToNextIDs(t *testing.T) {
	addr, got := scriptedPeer(t, "-ERR unknown command 'NEXTRANGE'\r\n",
		"*3\r\n:20\r\n:21\r\n:22\r\n", "*3\r\n:23\r\n:24\r\n:25\r\n")
	c := dialT(t, addr)
	for _, want := range []int64{20, 23} {
		if first, err := c.run(3); err != nil || first != want {
			t.Fatalf("run(3) = %d, %v; want %d", first, err, want)
		}
	}
	var sent []string
	for range 3 {
		r := <-got
		sent = append(sent, strings.Split(r, "\r\n")[2])
	}
	if strings.Join(sent, " ") != "NEXTRANGE NEXTIDS NEXTIDS" {
		t.Fatalf("sent %v; want NEXTRANGE once, then NEXTIDS", sent)
	}

	addr, _ = scriptedPeer(t, "-ERR unknown command 'NEXTRANGE', with args beginning with: '3'\r\n", "*3\r\n:20\r\n:21\r\n:23\r\n")
	c = dialT(t, addr)
	var pe *ProtocolError
	if _, err := c.run(3); !errors.As(err, &pe) {
		t.Fatalf("a NEXTIDS run with a gap: %v, want a *ProtocolError", err)
	}
	// Another -ERR is the caller's, not a reason to fall back.
	addr, _ = scriptedPeer(t, "-ERR count must be an integer in 1..4096, got '0'\r\n")
	c = dialT(t, addr)
	var re *ReplyError
	if _, err := c.run(0); !errors.As(err, &re) || c.ranges != rangesUnknown {
		t.Fatalf("run(0): %v, ranges %d; want the -ERR and nothing learned", err, c.ranges)
	}
}

// A client of workers that have no NEXTRANGE (the stand-in) gets its IDs
// through NEXTIDS, for NextN and for the prefetch alike.
func TestClientWithoutNextRange(t *testing.T) {
	w := newStandIn(t)
	cfg := DefaultConfig()
	cfg.Prefetch = 100
	c, _ := newCountingClient(t, cfg, w)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ids, err := c.NextN(ctx, 5)
	if err != nil || len(ids) != 5 || ids[4] != ids[0]+4 {
		t.Fatalf("NextN(5) = %v, %v", ids, err)
	}
	seen := map[int64]bool{}
	for range 1000 {
		id, err := c.Next(ctx)
		if err != nil || seen[id] {
			t.Fatalf("Next = %d, %v (seen before: %v)", id, err, seen[id])
		}
		seen[id] = true
	}
	if fails := value(c.m.broken) + value(c.m.errReply); fails > 0 {
		t.Errorf("%v requests failed against a worker without NEXTRANGE", fails)
	}
}

// Against real workers, NextN, NextRange and the prefetch draw NEXTRANGE
// (the workers count it), never NEXTIDS, and Next with the buffer empty
// fetches a run too, never a NEXTID (which would leave the worker's
// millisecond too short for a run of 4,096); the prefetch draws from every
// worker at once, with two refillers a worker.
func TestClientUsesNextRange(t *testing.T) {
	_, ws := startFleet(t, 2)
	cfg := DefaultConfig()
	cfg.Static = []string{ws[0].Addr, ws[1].Addr}
	cfg.Prefetch = MaxBatch
	c, _ := newTestClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var all []int64
	for _, n := range []int{1, 7, MaxBatch} {
		ids, err := c.NextN(ctx, n)
		if err != nil || len(ids) != n {
			t.Fatalf("NextN(%d) = %d IDs, %v", n, len(ids), err)
		}
		checkSameMillisecond(t, ids[0], n)
		all = append(all, ids...)
	}
	first, err := c.NextRange(ctx, 300)
	if err != nil {
		t.Fatal(err)
	}
	checkSameMillisecond(t, first, 300)
	for i := range int64(300) {
		all = append(all, first+i)
	}
	for range 5 * MaxBatch * 4 {
		id, err := c.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, id)
	}
	checkUnique(t, all)
	if slots := slotsOf(all); len(slots) != 2 {
		t.Errorf("IDs came from slots %v, want both workers'", slots)
	}
	if n := c.pf.Load().started.Load(); n != int32(max(minRefillers, 2*2)) {
		t.Errorf("%d refillers for 2 workers, want %d", n, max(minRefillers, 4))
	}
	for _, w := range ws {
		ranges, ids, one := workerRequests(t, w, "nextrange"), workerRequests(t, w, "nextids"), workerRequests(t, w, "nextid")
		if ranges == 0 || ids != 0 || one != 0 {
			t.Errorf("worker %s served %v NEXTRANGE, %v NEXTIDS, %v NEXTID; want NEXTRANGE only", w.Addr, ranges, ids, one)
		}
	}
}

// checkSameMillisecond fails unless first .. first+n-1 share a millisecond
// and a slot.
func checkSameMillisecond(t *testing.T, first int64, n int) {
	t.Helper()
	a, _ := snowflake.Decode(first)
	b, _ := snowflake.Decode(first + int64(n) - 1)
	if a.UnixMs != b.UnixMs || a.Slot() != b.Slot() {
		t.Fatalf("run %d+%d spans %+v .. %+v", first, n, a, b)
	}
}

// workerRequests is the worker's snowflake_worker_requests_total for
// command, result ok, scraped from its /metrics.
func workerRequests(t *testing.T, w *fleettest.Worker, command string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + w.HTTP + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	prefix := `snowflake_worker_requests_total{command="` + command + `",result="ok"} `
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			var f float64
			fmt.Sscan(v, &f)
			return f
		}
	}
	return 0
}

// testPrefetch is a prefetch buffer of a client of nothing, with no
// refillers running, for tests of the buffer alone.
func testPrefetch(t *testing.T) *prefetch {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Static = []string{"127.0.0.1:1"}
	c, _ := newTestClient(t, cfg)
	p := &prefetch{c: c, stale: int64(time.Second), want: make(chan struct{}, 1), stop: make(chan struct{})}
	p.started.Store(maxRefillers) // grow starts none
	p.clock.Store(nanotime())
	return p
}

// Handing out a run's IDs allocates nothing, crossing from one run to the
// next included, and gives each ID once, in order.
func TestPrefetchHandsOutWithoutAllocating(t *testing.T) {
	p := testPrefetch(t)
	first, _ := snowflake.Encode(snowflake.Fields{UnixMs: time.Now().UnixMilli(), Datacenter: 1, Machine: 1})
	p.add(first, 4096)
	p.add(first+8192, 4096)
	want := first
	allocs := testing.AllocsPerRun(6000, func() {
		id, ok := p.next()
		if !ok || id != want {
			t.Fatalf("next = %d, %v; want %d", id, ok, want)
		}
		want++
		if want == first+4096 {
			want = first + 8192
		}
	})
	if allocs != 0 {
		t.Errorf("next allocates %v times an ID", allocs)
	}
}

// A run whose deadline the coarse clock has reached is not handed out, even
// by the path that reads no clock, and its IDs are counted dropped.
func TestPrefetchStaleByCoarseClock(t *testing.T) {
	t.Parallel()
	p := testPrefetch(t)
	r := &idRun{end: 1<<40 + 100, deadline: p.clock.Load()}
	r.next.Store(1 << 40)
	p.cur.Store(r)
	if id, ok := p.next(); ok {
		t.Fatalf("next handed out %d from a run the clock says is stale", id)
	}
	if n := value(p.c.m.prefetchDropped); n != 100 {
		t.Errorf("prefetch_dropped_total = %v, want 100", n)
	}
	// add drops a run stale on arrival: its timestamp older than
	// MaxStaleness by the wall clock.
	old, _ := snowflake.Encode(snowflake.Fields{UnixMs: time.Now().Add(-2 * time.Second).UnixMilli(), Datacenter: 1, Machine: 1})
	p.add(old, 10)
	if _, ok := p.next(); ok || value(p.c.m.prefetchDropped) != 110 {
		t.Errorf("a run 2s old with MaxStaleness 1s was kept (dropped %v)", value(p.c.m.prefetchDropped))
	}
}

// NextRange allocates nothing on a worker that has NEXTRANGE (given a
// context with a deadline).
func TestNextRangeAllocatesNothing(t *testing.T) {
	_, ws := startFleet(t, 1)
	cfg := DefaultConfig()
	cfg.Static = []string{ws[0].Addr}
	c, _ := newTestClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prev := int64(0)
	allocs := testing.AllocsPerRun(200, func() {
		first, err := c.NextRange(ctx, 64)
		if err != nil || first <= prev {
			t.Fatalf("NextRange = %d, %v after %d", first, err, prev)
		}
		prev = first + 63
	})
	if allocs != 0 {
		t.Errorf("NextRange allocates %v times a call", allocs)
	}
}
