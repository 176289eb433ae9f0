package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// TestScale is the fleet at size, as an operator runs it: N snowflaked
// processes with default flags against one ZooKeeper. It prints what
// ZooKeeper counts (srvr and cons): the requests per worker per second in
// steady state, the requests one worker's replacement (SIGTERM, a new
// process started) costs in all and costs the holders that stayed, and
// the time until all N serve from a cold start. It asserts what must hold
// at any size (all N serve distinct slots, the replacement serves); the
// figures are measurements, compared across sizes in
// deploy/bench-history.md, not asserted. Run by make scale
// (SNOWFLEET_SCALE=16,64; make scale SCALE=256 for more);
// SNOWFLEET_SCALE_WINDOW sets each measuring window (default 15s);
// SNOWFLEET_SCALE_BIN runs another snowflaked binary (an older build).
func TestScale(t *testing.T) {
	sizes := os.Getenv("SNOWFLEET_SCALE")
	if sizes == "" {
		t.Skip("make scale runs it (SNOWFLEET_SCALE=16,64)")
	}
	window := 15 * time.Second
	if w := os.Getenv("SNOWFLEET_SCALE_WINDOW"); w != "" {
		d, err := time.ParseDuration(w)
		if err != nil || d <= 0 {
			t.Fatalf("SNOWFLEET_SCALE_WINDOW=%q: want a positive duration such as 15s", w)
		}
		window = d
	}
	bin := os.Getenv("SNOWFLEET_SCALE_BIN") // an older build, to compare
	if bin == "" {
		bin = build(t)
	}
	var rows []string
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 || n > 1024 {
			t.Fatalf("SNOWFLEET_SCALE=%q: %q is not a number of workers from 2 to 1024", sizes, f)
		}
		t.Run(strconv.Itoa(n), func(t *testing.T) { rows = append(rows, scale(t, bin, n, window)) })
	}
	t.Logf("\n| workers | cold start, all serving | steady req/s | per worker | one replaced: requests above steady, in all | the new worker's until it served | the holders' above steady | holders' noise (two steady windows) |\n|---|---|---|---|---|---|---|---|\n%s",
		strings.Join(rows, "\n"))
}

// scale runs one size and returns its table row.
func scale(t *testing.T, bin string, n int, window time.Duration) string {
	zks := zktest.Start(t)
	args := []string{"--zk", zks.Addr(), "--zk-root", "/scale", "--log-level", "warn"}
	initDaemonRoot(t, nil, append([]string{"--listen", "127.0.0.1:0"}, args...))
	start := time.Now()
	ds := make([]*daemonProc, n)
	for i := range ds {
		ds[i] = spawnDaemon(t, bin, nil, nil, false, args...)
	}
	allReady(t, ds, 5*time.Minute)
	cold := time.Since(start)
	slots := map[string]bool{}
	for _, d := range ds {
		slots[d.status().Slot] = true
	}
	if len(slots) != n {
		t.Fatalf("%d workers serve %d distinct slots", n, len(slots))
	}
	time.Sleep(3 * time.Second) // the claims' last writes

	victim := ds[0]
	vsid := victim.status().SessionID
	type snap struct {
		total int
		by    map[int64]int
	}
	take := func() snap { return snap{zks.ReceivedTotal(t), zks.ReceivedBySession(t)} }
	// Snapshots on a grid, window apart, so that every window is as long
	// (a cons of hundreds of sessions takes a while itself).
	base := time.Now()
	at := func(k int) snap { time.Sleep(time.Until(base.Add(time.Duration(k) * window))); return take() }
	s0 := at(0)
	s1 := at(1)
	if code := victim.stop(); code != 0 {
		t.Fatalf("the replaced worker exited %d", code)
	}
	next := spawnDaemon(t, bin, nil, nil, false, args...)
	allReady(t, []*daemonProc{next}, time.Minute)
	newcomer := zks.Received(t, next.status().SessionID)
	if replaced := time.Since(base.Add(window)); replaced > window {
		t.Logf("the replacement took %v, longer than the window %v: its figure covers only the window", replaced, window)
	}
	s2 := at(2)
	s3 := at(3)

	// The holders: sessions there through all four snapshots, the
	// replaced worker's not among them.
	holders, hSteady, hReplace, hNoise := 0, 0, 0, 0
	for sid, c0 := range s0.by {
		c1, ok1 := s1.by[sid]
		c2, ok2 := s2.by[sid]
		c3, ok3 := s3.by[sid]
		if sid == vsid || !ok1 || !ok2 || !ok3 {
			continue
		}
		holders++
		hSteady += c1 - c0
		hReplace += c2 - c1
		hNoise += c3 - c2
	}
	if holders < n-1 {
		t.Errorf("only %d of the %d holders kept their session through the measure", holders, n-1)
	}
	steady := s1.total - s0.total
	rate := float64(steady) / window.Seconds()
	row := fmt.Sprintf("| %d | %.1f s | %.1f | %.2f | %d | %d | %d | %d |", n, cold.Seconds(), rate, rate/float64(n),
		(s2.total-s1.total)-steady, newcomer, hReplace-hSteady, hNoise-hSteady)
	t.Log(row)
	return row
}

// allReady waits until every d answers /readyz 200, polling them side by
// side; a bound against hanging, not a timing assertion.
func allReady(t *testing.T, ds []*daemonProc, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var late []string
	sem := make(chan struct{}, 32)
	for _, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			for {
				if code, _ := d.get("/readyz"); code == 200 {
					return
				}
				select {
				case <-d.exited:
					mu.Lock()
					late = append(late, fmt.Sprintf("%s exited: %s", d.http, d.out.String()))
					mu.Unlock()
					return
				default:
				}
				if time.Now().After(deadline) {
					mu.Lock()
					late = append(late, d.http)
					mu.Unlock()
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	if len(late) > 0 {
		t.Fatalf("%d of %d workers not ready within %v (by admin port): %v", len(late), len(ds), within, late)
	}
}
