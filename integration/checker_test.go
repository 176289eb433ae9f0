//go:build integration

package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// testID is the ID of (ms, the suite's datacenter, machine m, seq).
func testID(t *testing.T, ms int64, m, seq int) int64 {
	t.Helper()
	v, err := snowflake.Encode(snowflake.Fields{UnixMs: ms, Datacenter: datacenter, Machine: m, Sequence: seq})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The suite's verdicts are only as good as its checks: each must catch the
// fault it is for.
func TestCheckersCatchFaults(t *testing.T) {
	id := func(ms int64, m, seq int) int64 { return testID(t, ms, m, seq) }
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

// The lease, ceiling and hand-over checks, and Evaluate as a whole, on
// constructed facts: each bad fact must come out as a problem, and the
// good ones as none.
func TestEvaluateCatchesFaults(t *testing.T) {
	id := func(ms int64, m, seq int) int64 { return testID(t, ms, m, seq) }
	const ms = 1_800_000_000_000
	t0 := time.UnixMilli(ms)
	slot := snowflake.Slot{Datacenter: datacenter, Machine: 1}
	lease := func(seq int) string { return fmt.Sprintf("_c_abc-dc03-m01-%010d", seq) }
	serving := func(node string, floor, ceiling int64) workerStatus {
		return workerStatus{State: coordinator.StateServing, Slot: "dc03-m01", LeaseNode: node, FloorMs: floor, CeilingMs: ceiling, Ready: true}
	}
	good := func() checkInput {
		s := newStream("redis/worker_1", "c1")
		s.add(t0, id(ms, 1, 0), id(ms, 1, 1))
		return checkInput{
			ids:      []int64{id(ms, 1, 0), id(ms, 1, 1)},
			streams:  []*stream{s},
			samples:  map[string][]sample{"c1": {{at: t0.Add(-time.Second), workerStatus: serving(lease(7), ms-100, ms+5000)}, {at: t0.Add(100 * time.Millisecond), workerStatus: serving(lease(7), ms-100, ms+5000)}}},
			names:    map[string]string{"c1": "worker_1"},
			until:    t0.Add(time.Hour),
			statuses: []holding{{"worker_1", serving(lease(7), ms-100, ms+5000)}},
			leases:   []string{lease(7)},
			slots:    map[snowflake.Slot]tree.SlotRecord{slot: {ReservedUntilMs: ms + 5000, Holder: lease(7)}},
		}
	}
	if v := Evaluate(good()); len(v.Problems) != 0 || v.Ceilings.Checked != 2 {
		t.Fatalf("good facts: problems %v, %+v checked", v.Problems, v.Ceilings)
	}
	cases := map[string]func(in *checkInput){
		"duplicate": func(in *checkInput) { in.ids = append(in.ids, in.ids[0]) },
		"two holders as ZooKeeper lists them": func(in *checkInput) {
			in.leases = append(in.leases, lease(3))
			in.statuses = append(in.statuses, holding{"worker_2", serving(lease(3), ms-200, ms+4000)})
		},
		"a serving worker's lease ZooKeeper does not list": func(in *checkInput) { in.leases = nil },
		"zombie and successor overlap": func(in *checkInput) {
			in.statuses = append(in.statuses, holding{"worker_2", workerStatus{State: coordinator.StateDisconnected, Slot: "dc03-m01", LeaseNode: lease(5), FloorMs: ms - 900, CeilingMs: ms + 100}})
		},
		"ceiling above the stored reservation": func(in *checkInput) {
			in.slots[slot] = tree.SlotRecord{ReservedUntilMs: ms + 4000}
		},
		"ID above the ceiling polled after it arrived": func(in *checkInput) {
			in.samples["c1"][1].CeilingMs = ms - 1
		},
		"ID above the ceiling of the last poll of a holder that died": func(in *checkInput) {
			in.samples["c1"] = in.samples["c1"][:1]
			in.samples["c1"][0].CeilingMs = ms - 1
		},
		"Go client ID above every holder's ceiling": func(in *checkInput) {
			s := newStream("go-client/nextids", "")
			s.add(t0, id(ms+6000, 1, 0))
			in.streams = append(in.streams, s)
		},
		"running worker without /status": func(in *checkInput) { in.unreachable = []string{"worker_3: connection refused"} },
	}
	for name, bad := range cases {
		in := good()
		bad(&in)
		if v := Evaluate(in); len(v.Problems) == 0 && v.Duplicates == 0 {
			t.Errorf("%s: not caught", name)
		} else {
			t.Logf("%s: %v", name, v.Problems)
		}
	}

	t.Run("hand-over", func(t *testing.T) {
		old := []int64{id(ms, 1, 0), id(ms+10, 1, 0)}
		succ := []int64{id(ms+20, 1, 0)}
		if _, p := handover("a", "b", old, succ, "dc03-m01", ms+15); len(p) != 0 {
			t.Errorf("a clean hand-over: %v", p)
		}
		for name, c := range map[string]struct {
			old, succ []int64
			floor     int64
		}{
			"old above the floor":    {old, succ, ms + 5},
			"successor at floor":     {old, succ, ms + 20},
			"old served nothing":     {nil, succ, ms + 15},
			"successor nothing":      {old, nil, ms + 15},
			"successor has no floor": {old, succ, 0},
		} {
			if _, p := handover("a", "b", c.old, c.succ, "dc03-m01", c.floor); len(p) == 0 {
				t.Errorf("%s: not caught", name)
			}
		}
	})
}

// The Go-client path: a worker that repeats an ID inside a NEXTIDS reply
// is rejected by the client, which retries on a good worker, so the call
// succeeds; the suite must still see it (protocol errors, retries).
func TestGoClientPathCatchesBadBatch(t *testing.T) {
	const ms = 1_800_000_000_000
	next := int64(0)
	var mu sync.Mutex
	serve := func(bad bool) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go fakeWorker(c, bad, func() int64 {
					mu.Lock()
					defer mu.Unlock()
					next++
					v, _ := snowflake.Encode(snowflake.Fields{UnixMs: ms + next/4000, Datacenter: datacenter, Machine: 2, Sequence: int(next % 4000)})
					return v
				})
			}
		}()
		return ln.Addr().String()
	}
	badAddr, goodAddr := serve(true), serve(false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c := newCollector(nil, t.Logf, cancel)
	c.useClient([]string{badAddr, goodAddr})
	defer c.cli.Close()
	before := c.snap()
	c.clientLoop(ctx, newStream("go-client/nextids", ""), batch)
	after := c.snap()
	d := after.client.sub(before.client)
	proto := after.protocolErrs - before.protocolErrs
	t.Logf("ids %d, failed calls %d, retries %.0f, protocol %d", after.ids-before.ids, after.clientErrs-before.clientErrs, d.retries, proto)
	if after.ids == before.ids {
		t.Fatal("no IDs through the good worker")
	}
	if proto == 0 || d.retries == 0 {
		t.Errorf("the bad batch went unseen: %d protocol errors, %.0f retries", proto, d.retries)
	}
	causes := c.TakeCauses()
	if len(causes) == 0 || !strings.Contains(causes[0], badAddr) {
		t.Errorf("the retries' causes do not name the bad worker %s first: %q", badAddr, causes)
	}
	if p := clientProblems(d, proto, "a worker stops", causes); len(p) == 0 {
		t.Errorf("clientProblems let %d protocol errors pass", proto)
	}
	timeout := "03:32:56.902 127.0.0.1:32888: read from worker 127.0.0.1:32888: read tcp 127.0.0.1:35446->127.0.0.1:32888: i/o timeout"
	for _, c := range []struct {
		what   string
		d      clientMetrics
		causes []string
		want   bool // a problem
	}{
		{"unexplained retries", clientMetrics{retries: 3, broken: 3}, []string{"a: EOF"}, true},
		{"one timeout (a stall)", clientMetrics{retries: 1, broken: 1}, []string{timeout}, false},
		{"timeouts past the stall bound", clientMetrics{retries: maxStallRetries + 1, broken: maxStallRetries + 1}, []string{timeout, timeout, timeout}, true},
		{"a refusal behind a timeout", clientMetrics{retries: 2, broken: 1, noLease: 1}, []string{timeout, "b: NOLEASE"}, true},
		{"a dropped connection", clientMetrics{retries: 1, broken: 1}, []string{"a: read from worker a: EOF"}, true},
		{"a retry with no cause logged", clientMetrics{retries: 1, broken: 1}, nil, true},
	} {
		if p := clientProblems(c.d, 0, "", c.causes); (len(p) > 0) != c.want {
			t.Errorf("%s: clientProblems = %q, want a problem %v", c.what, p, c.want)
		}
	}
	if p := clientProblems(clientMetrics{retries: 3}, 0, "explained", nil); len(p) != 0 {
		t.Errorf("clientProblems flagged explained retries: %v", p)
	}
}

// fakeWorker answers NEXTID and NEXTIDS n over RESP, as a worker older than
// NEXTRANGE did; a bad one repeats the first ID of every batch.
func fakeWorker(c net.Conn, bad bool, next func() int64) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		var args []string
		for i := 0; i < n; i++ {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
			a, err := r.ReadString('\n')
			if err != nil {
				return
			}
			args = append(args, strings.TrimSpace(a))
		}
		var out strings.Builder
		switch {
		case len(args) == 1 && strings.EqualFold(args[0], "NEXTID"):
			fmt.Fprintf(&out, ":%d\r\n", next())
		case len(args) == 2 && strings.EqualFold(args[0], "NEXTIDS"):
			k, _ := strconv.Atoi(args[1])
			fmt.Fprintf(&out, "*%d\r\n", k)
			first := next()
			for i := 0; i < k; i++ {
				v := first
				if i > 0 && !(bad && i == 1) {
					v = next()
				}
				fmt.Fprintf(&out, ":%d\r\n", v)
			}
		default:
			// As a worker answers a command it has not (NEXTRANGE, which
			// the Go client then asks again as NEXTIDS).
			fmt.Fprintf(&out, "-ERR unknown command '%s'\r\n", args[0])
		}
		if _, err := c.Write([]byte(out.String())); err != nil {
			return
		}
	}
}
