//go:build linux

package clients

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

func TestMain(m *testing.M) { os.Exit(fleettest.Main(m)) }

const sessionTimeout = 2 * time.Second

// window is a fault's span, from its start to the time the fleet may take
// to route around it; a client error outside every window fails the test.
type window struct {
	name       string
	start, end time.Time
	// conns is how many client connections the worker had when the fault
	// began (its /status); quiet: a fault the clients may ride out without
	// an error, since the kernel (SIGKILL) or the drain (SIGTERM) closes
	// the connections and clients reconnect between calls; a paused worker
	// holds a call in flight until it times out or is refused.
	conns int64
	quiet bool
}

// TestRealClientsThroughBalancer draws at least 100,000 IDs with each of
// redis-py, node-redis (string mode) and redis-cli through HAProxy while
// one worker is SIGKILLed, one SIGSTOPped past its session timeout and
// resumed, and one SIGTERMed, each the one with the most client
// connections at the time. Every ID is kept: none repeats, each decodes
// to a slot a worker held and to a time within the run, and every error a
// client saw falls inside a fault's window.
func TestRealClientsThroughBalancer(t *testing.T) {
	need(t)
	zks := zktest.Start(t)
	ws := make([]*fleettest.Worker, 4)
	for i := range ws {
		ws[i] = fleettest.Start(t, fleettest.Options{ZK: zks.Addr(), Root: "/clients",
			SessionTimeout: sessionTimeout, Renew: 200 * time.Millisecond, Horizon: time.Second})
	}
	for _, w := range ws {
		w.WaitReady(20 * time.Second)
	}
	front := startHAProxy(t, ws)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	slots := watchSlots(ctx, ws)

	// The negative control first, while the fleet is calm: node-redis reading
	// RESP integers gets JavaScript numbers, rounded past 2^53.
	control := nodeDraw(ctx, t, drawSpec{addr: front, total: 4096, batch: 512, lanes: 1, pause: time.Millisecond}, "integer")
	if control.err != nil {
		t.Fatalf("node-redis integer control: %v", control.err)
	}
	if n, d := len(control.ids), distinct(control.ids); d >= n {
		t.Errorf("node-redis in integer mode: %d distinct of %d drawn; the 53-bit rounding should have merged some", d, n)
	} else {
		t.Logf("negative control: node-redis in integer mode got %d distinct values for %d IDs drawn", d, n)
	}

	start := time.Now()
	spec := drawSpec{addr: front, total: 100_000, batch: 100, lanes: 4, pause: 2 * time.Millisecond, min: 15 * time.Second}
	cli := spec
	cli.batch, cli.pause = 1000, 20*time.Millisecond
	var windows []window
	var faultsDone sync.WaitGroup
	faultsDone.Add(1)
	go func() {
		defer faultsDone.Done()
		windows = injectFaults(ctx, ws)
	}()
	draws := runAll(
		func() *draw { return pyDraw(ctx, t, spec) },
		func() *draw { return nodeDraw(ctx, t, spec, "string") },
		func() *draw { return drawRedisCLI(ctx, cli) },
	)
	faultsDone.Wait()
	end := time.Now()
	held := slots()

	var all []uint64
	seen := map[string]int{} // client errors per fault window
	for _, d := range draws {
		if d.err != nil {
			t.Errorf("%s: %v", d.name, d.err)
		}
		if len(d.ids) < spec.total {
			t.Errorf("%s drew %d IDs, want at least %d", d.name, len(d.ids), spec.total)
		}
		outside := 0
		for _, f := range d.errs {
			w := within(windows, f.at)
			seen[w]++
			if w == "" {
				outside++
				t.Errorf("%s: error at %s outside every fault window: %s", d.name, f.at.Format("15:04:05.000"), f.msg)
			}
		}
		t.Logf("%s: %d IDs, %d distinct, %d failed attempts (all inside fault windows: %v)",
			d.name, len(d.ids), distinct(d.ids), len(d.errs), outside == 0)
		all = append(all, d.ids...)
	}
	if dup := duplicates(all); dup != 0 {
		t.Errorf("%d duplicate IDs among %d drawn by the three clients", dup, len(all))
	}
	checkDecode(t, all, held, start, end)
	for _, w := range windows {
		t.Logf("fault %s: %s .. %s: %d client connections on it, %d client errors", w.name,
			w.start.Format("15:04:05.000"), w.end.Format("15:04:05.000"), w.conns, seen[w.name])
		// Each fault reached clients (the lanes spread the connections over
		// every worker): else it proved nothing about moving on.
		if w.conns == 0 {
			t.Errorf("fault %s: the worker had no client connection when it began", w.name)
		}
		if seen[w.name] == 0 && !w.quiet {
			t.Errorf("fault %s: no client saw an error: the clients never reached that worker", w.name)
		}
	}
}

// injectFaults kills one worker, pauses another past its session timeout
// and then resumes it, and stops a third with SIGTERM; the fourth serves
// throughout. Each fault goes to the worker, of those not yet faulted,
// with the most client connections at that moment (round robin over
// connections that come and go leaves no worker sure to have one), so
// that every fault reaches clients. It returns each fault's window.
func injectFaults(ctx context.Context, ws []*fleettest.Worker) []window {
	const grace = 2 * time.Second // health checks (100ms), redispatch, client back-off
	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	left := append([]*fleettest.Worker(nil), ws...)
	busiest := func() (*fleettest.Worker, int64) {
		best, n := 0, int64(-1)
		for i, w := range left {
			if c := connections(w); c > n {
				best, n = i, c
			}
		}
		w := left[best]
		left = append(left[:best], left[best+1:]...)
		return w, n
	}
	var out []window

	sleep(1500 * time.Millisecond)
	w, n := busiest()
	t0 := time.Now()
	w.Kill()
	out = append(out, window{name: "SIGKILL " + w.Addr, start: t0, end: time.Now().Add(grace), conns: n, quiet: true})

	sleep(grace + 500*time.Millisecond) // windows apart, so each fault's errors are its own
	w, n = busiest()
	t1 := time.Now()
	w.Pause()
	sleep(sessionTimeout + 1500*time.Millisecond)
	w.Resume()
	out = append(out, window{name: "SIGSTOP/SIGCONT " + w.Addr, start: t1, end: time.Now().Add(grace), conns: n})

	sleep(grace + 500*time.Millisecond)
	w, n = busiest()
	t2 := time.Now()
	_ = w.Term(10 * time.Second)
	out = append(out, window{name: "SIGTERM " + w.Addr, start: t2, end: time.Now().Add(grace), conns: n, quiet: true})
	return out
}

// connections is the worker's count of open client connections (/status).
func connections(w *fleettest.Worker) int64 {
	var st struct {
		Connections int64 `json:"connections"`
	}
	resp, err := (&http.Client{Timeout: time.Second}).Get("http://" + w.HTTP + "/status")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return st.Connections
}

func within(ws []window, at time.Time) string {
	for _, w := range ws {
		if !at.Before(w.start) && !at.After(w.end) {
			return w.name
		}
	}
	return ""
}

// watchSlots polls each worker's /status while ctx lasts and returns a
// function giving every slot a worker reported holding (one last poll).
func watchSlots(ctx context.Context, ws []*fleettest.Worker) func() map[string]bool {
	var mu sync.Mutex
	seen := map[string]bool{}
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	poll := func() {
		for _, w := range ws {
			resp, err := hc.Get("http://" + w.HTTP + "/status")
			if err != nil {
				continue
			}
			var st struct {
				Slot string `json:"slot"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if st.Slot != "" {
				mu.Lock()
				seen[st.Slot] = true
				mu.Unlock()
			}
		}
	}
	poll()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
				poll()
			}
		}
	}()
	return func() map[string]bool {
		poll()
		mu.Lock()
		defer mu.Unlock()
		out := make(map[string]bool, len(seen))
		for k := range seen {
			out[k] = true
		}
		return out
	}
}

func checkDecode(t *testing.T, ids []uint64, held map[string]bool, start, end time.Time) {
	t.Helper()
	bad := 0
	for _, id := range ids {
		f, err := snowflake.Decode(int64(id))
		var why string
		switch {
		case err != nil:
			why = err.Error()
		case !held[snowflake.Slot{Datacenter: f.Datacenter, Machine: f.Machine}.String()]:
			why = "its slot was held by no worker"
		case f.UnixMs < start.UnixMilli()-1 || f.UnixMs > end.UnixMilli()+1:
			why = "its time lies outside the run"
		}
		if why != "" {
			if bad++; bad <= 5 {
				t.Errorf("ID %d: %s", id, why)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d IDs do not decode to a held slot and a time within the run (slots held: %v)", bad, len(ids), held)
	}
}

func distinct(ids []uint64) int {
	return len(ids) - duplicates(ids)
}

func duplicates(ids []uint64) int {
	s := append([]uint64(nil), ids...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	n := 0
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			n++
		}
	}
	return n
}
