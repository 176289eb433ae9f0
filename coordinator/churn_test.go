package coordinator

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/snowflake"
)

// blockedSlots counts the slots of datacenter dc that a claimer cannot
// serve at once and that no live worker serves: held by a lease node of a
// dead session (live names the live one), or free with a stored
// reservation still ahead of the clock.
func blockedSlots(t *testing.T, conn *zk.Conn, root string, dc int, live string) int {
	t.Helper()
	names, _, err := conn.Children(zklayout.LeasesPath(root))
	if errors.Is(err, zk.ErrNoNode) {
		return 0 // the root is still being made
	}
	if err != nil {
		t.Fatal(err)
	}
	held := zklayout.Holders(names)
	now := time.Now().UnixMilli()
	n := 0
	for m := 0; m <= snowflake.MaxMachine; m++ {
		s := snowflake.Slot{Datacenter: dc, Machine: m}
		if h, ok := held[s]; ok {
			if h.Name != live {
				n++
			}
			continue
		}
		if rec, ok := readSlot(t, conn, root, s); ok && rec.ReservedUntilMs > now {
			n++
		}
	}
	return n
}

// The price of a long horizon under churn: a crash-looping worker leaves
// each slot it held reserved for up to a horizon after the crash, so it
// keeps at most about horizon / restart period slots blocked, never more.
// Scaled down by 5 from "a restart every 2 s for 60 s with a 30 s
// horizon" (15 blocked): a restart every 400 ms for 12 s with a 6 s
// horizon; the session timeout (1 s) is below the horizon, as by default.
func TestCrashLoopBlocksFewSlots(t *testing.T) {
	const (
		period  = 400 * time.Millisecond
		horizon = 6 * time.Second
		run     = 12 * time.Second
		dc      = 3
	)
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	cfg := testConfig()
	cfg.Datacenter = dc
	cfg.SessionTimeout = time.Second
	cfg.Horizon = horizon
	cfg.MaxReservationWait = 500 * time.Millisecond // a blocked slot is passed over
	bound := int(horizon/period) + 3
	rec := newRecorder()
	rec.pace = 5 * time.Millisecond

	// The root first, made by a worker that releases its slot: a root made
	// in a retry (a slow create under -race) reserves its nodes a horizon
	// ahead, which is not the churn's doing; wait until none is ahead.
	rootCfg := cfg
	rootCfg.Servers = []string{zs.Addr()}
	first := startWorker(t, "root", rootCfg, nil)
	first.waitReady(15 * time.Second)
	first.Stop()
	waitFor(t, horizon+5*time.Second, "no slot blocked before the crash loop", func() bool {
		return blockedSlots(t, obs, cfg.Root, dc, "") == 0
	})

	start := time.Now()
	most, restarts, served := 0, 0, 0
	for time.Since(start) < run {
		p := faultproxy.New(t, zs.Addr())
		c := cfg
		c.Servers = []string{p.Addr()}
		w := startWorker(t, "w"+itoa(restarts), c, rec)
		restarts++
		deadline := time.Now().Add(period)
		for time.Now().Before(deadline) {
			live := w.c.Status().LeaseNode
			if b := blockedSlots(t, obs, cfg.Root, dc, live); b > most {
				most = b
			}
			time.Sleep(50 * time.Millisecond)
		}
		if w.c.Ready() {
			served++
		}
		w.Crash()
		p.Blackhole() // kill -9: no release; the session expires
		go w.Stop()   // ends Run; nothing it sends passes the proxy
	}
	t.Logf("crash loop: %d restarts every %v over %v (horizon %v, session %v): at most %d slots blocked at once (bound %d = horizon/period + 3); %d of the restarts served",
		restarts, period, run, horizon, cfg.SessionTimeout, most, bound, served)
	if most > bound {
		t.Fatalf("%d slots blocked at once, want at most %d", most, bound)
	}
	if served < restarts/2 {
		t.Fatalf("only %d of %d restarts served within %v", served, restarts, period)
	}
	rec.checkDisjoint(t)
}
