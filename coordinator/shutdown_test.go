package coordinator

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// gateClock is the real clock with a gate: a reading taken while the gate
// is shut waits until it opens, as in a process paused (SIGSTOP, a long GC)
// in the middle of a renew.
type gateClock struct {
	mu      sync.Mutex
	gate    chan struct{}
	blocked atomic.Bool
}

func (c *gateClock) UnixNano() int64 {
	c.mu.Lock()
	g := c.gate
	c.mu.Unlock()
	if g != nil {
		c.blocked.Store(true)
		<-g
	}
	return time.Now().UnixNano()
}

func (c *gateClock) Sleep(d time.Duration) { snowflake.SystemClock{}.Sleep(d) }

func (c *gateClock) shut() {
	c.mu.Lock()
	c.gate = make(chan struct{})
	c.mu.Unlock()
}

func (c *gateClock) open() {
	c.mu.Lock()
	close(c.gate)
	c.gate = nil
	c.mu.Unlock()
}

// serverZxid is the last zxid ZooKeeper committed: every write request a
// session makes — a Multi that fails included — and every session close
// is a transaction and moves it by one; reads and pings do not.
func serverZxid(t testing.TB, addr string) int64 {
	t.Helper()
	out, err := zktest.FourLetter(addr, "srvr", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Zxid: 0x"); ok {
			z, err := strconv.ParseInt(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("srvr Zxid %q: %v", v, err)
			}
			return z
		}
	}
	t.Fatalf("srvr printed no Zxid:\n%s", out)
	return 0
}

// Once ctx is cancelled the coordinator launches no ZooKeeper call but the
// release's: a renew that was under way when SIGTERM came, with the next
// tick already due, sends nothing. Counted in ZooKeeper's transactions
// after the cancel: the release's Multi, the lease node's delete and the
// session's close, three, and the slot node written once (a renew used to
// go out after the cancel and race the release write).
func TestNoCallAfterCancel(t *testing.T) {
	zs := startZK(t)
	clk := &gateClock{}
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.Clock = clk
	w := startWorker(t, "W", cfg, nil)
	w.waitReady(10 * time.Second)
	obs := observer(t, zs.Addr())
	clk.shut() // the holder pauses inside its next renew
	waitFor(t, 2*time.Second, "holder paused in a renew", clk.blocked.Load)
	time.Sleep(2 * cfg.Renew) // the next tick is due too
	before, _ := readSlot(t, obs, cfg.Root, testSlot)
	zx0 := serverZxid(t, zs.Addr())
	w.cancel() // SIGTERM
	clk.open()
	select {
	case err := <-w.done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(cfg.ReleaseTimeout + 5*time.Second):
		t.Fatal("Run did not return after cancel")
	}
	w.stopOnce.Do(func() {})
	zx1 := serverZxid(t, zs.Addr())
	if n := zx1 - zx0; n != 3 {
		t.Errorf("%d transactions after the cancel (zxid %#x to %#x), want 3: release write, delete, close", n, zx0, zx1)
	}
	after, _ := readSlot(t, obs, cfg.Root, testSlot)
	if n := after.Version - before.Version; n != 1 {
		t.Fatalf("slot node written %d times after the cancel (version %d to %d), want once, by the release", n, before.Version, after.Version)
	}
	if after.ReservedUntilMs >= before.ReservedUntilMs {
		t.Fatalf("reservation %d after release, not lowered from %d", after.ReservedUntilMs, before.ReservedUntilMs)
	}
	if names, _, _ := obs.Children(zklayout.LeasesPath(cfg.Root)); len(names) != 0 {
		t.Fatalf("lease nodes after release: %v", names)
	}
}

// With ZooKeeper unreachable the whole shutdown — the release and closing
// the session — ends within ReleaseTimeout plus one second, whichever call
// the holder was in.
func TestShutdownBoundedWhenUnreachable(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	cfg := pinned(testConfig(p.Addr(), p.Addr(), p.Addr()), testSlot)
	w := startWorker(t, "W", cfg, newRecorder())
	w.waitReady(10 * time.Second)
	p.Blackhole()
	// Long enough for go-zookeeper to call the connection lost and queue
	// calls for the next one.
	time.Sleep(cfg.SessionTimeout)
	start := time.Now()
	w.Stop()
	took := time.Since(start)
	t.Logf("shutdown with zookeeper unreachable took %v (ReleaseTimeout %v)", took.Round(time.Millisecond), cfg.ReleaseTimeout)
	// 200 ms of slack for the scheduler of a loaded test machine.
	if bound := cfg.ReleaseTimeout + time.Second + 200*time.Millisecond; took > bound {
		t.Fatalf("shutdown took %v, beyond ReleaseTimeout + 1s (%v)", took, bound)
	}
}
