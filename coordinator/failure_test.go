package coordinator

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/snowflake"
)

var testSlot = snowflake.Slot{Datacenter: 3, Machine: 4}

// pinnedConfig is a Config whose coordinator may claim only slots (its
// space narrowed after New), so that a successor must take a given slot.
type pinnedConfig struct {
	Config
	slots []snowflake.Slot
}

// workerConfig is what startWorker takes: a Config, or a pinnedConfig.
type workerConfig interface {
	split() (Config, []snowflake.Slot)
}

func (c Config) split() (Config, []snowflake.Slot)       { return c, nil }
func (p pinnedConfig) split() (Config, []snowflake.Slot) { return p.Config, p.slots }

// pinned is cfg whose coordinator may claim only the slots given.
func pinned(cfg Config, slots ...snowflake.Slot) pinnedConfig {
	return pinnedConfig{Config: cfg, slots: slots}
}

func (w *worker) losses() float64 {
	return float64(w.c.Status().Losses)
}

// 200 workers with separate sessions hold 200 distinct slots.
func TestTwoHundredClaimers(t *testing.T) {
	zs := startZK(t)
	cfg := testConfig(zs.Addr())
	cfg.SessionTimeout = 6 * time.Second
	cfg.Renew = time.Second
	cfg.Horizon = 3 * time.Second
	rec := newRecorder()
	rec.pace = 20 * time.Millisecond
	ws := make([]*worker, 200)
	var wg sync.WaitGroup
	initFleet(t, cfg) // once: 200 inits at once would pass ZooKeeper's connection cap
	for i := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws[i] = startWorkerBare(t, "w"+itoa(i), cfg, rec, nil, testLogger(t, "w"+itoa(i)))
		}()
	}
	wg.Wait()
	t.Cleanup(func() { stopAll(ws) })
	waitFor(t, 60*time.Second, "200 workers ready", func() bool {
		for _, w := range ws {
			if !w.c.Ready() {
				return false
			}
		}
		return true
	})
	held := map[string]string{}
	var creates int64
	for _, w := range ws {
		st := w.c.Status()
		if other, ok := held[st.Slot]; ok {
			t.Fatalf("%s and %s both hold %s", other, w.name, st.Slot)
		}
		held[st.Slot] = w.name
		creates += st.Creates
	}
	t.Logf("200 claimers: %d lease creates, %.2f per claim", creates, float64(creates)/200)
	obs := observer(t, zs.Addr())
	m, err := tree.ReadSlotMap(obs, cfg.Root)
	if err != nil {
		t.Fatal(err)
	}
	written := 0
	for _, r := range m.Slots {
		if r.Holder != "" {
			written++
		}
	}
	if len(m.Leases) != 200 || written != 200 || len(m.Slots) != snowflake.Slots {
		t.Fatalf("slot map: %d leases, %d slots written by a holder of %d, want 200, 200, %d",
			len(m.Leases), written, len(m.Slots), snowflake.Slots)
	}
	time.Sleep(100 * time.Millisecond)
	rec.checkDisjoint(t)
}

func stopAll(ws []*worker) {
	var wg sync.WaitGroup
	for _, w := range ws {
		if w == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); w.Stop() }()
	}
	wg.Wait()
}

// A holder crashes (its session is dropped without release): the slot is
// reusable after the session timeout and the successor's first timestamp is
// above everything the predecessor could have issued (its confirmed ceiling).
func TestCrashedHolder(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	rec := newRecorder()
	a := startWorker(t, "A", pinned(testConfig(p.Addr()), testSlot), rec)
	a.waitReady(10 * time.Second)
	time.Sleep(300 * time.Millisecond)
	a.Crash()
	p.Blackhole() // the process is gone: no release, no more traffic
	crashedAt := time.Now()
	ceilA := a.c.Generator().Ceiling()

	b := startWorker(t, "B", pinned(testConfig(zs.Addr()), testSlot), rec)
	b.waitReady(15 * time.Second)
	t.Logf("successor serving %v after the crash (session timeout 2s)", time.Since(crashedAt).Round(10*time.Millisecond))
	time.Sleep(200 * time.Millisecond)
	hs := rec.holdings(testSlot)
	if len(hs) != 2 || hs[0].worker != "A" || hs[1].worker != "B" {
		t.Fatalf("holdings %+v, want A then B", hs)
	}
	if hs[1].min <= ceilA {
		t.Fatalf("successor's first timestamp %d is not above the crashed holder's ceiling %d", hs[1].min, ceilA)
	}
	if f := b.c.Status().FloorMs; f < hs[0].max {
		t.Fatalf("successor's floor %d is below the predecessor's last issued %d", f, hs[0].max)
	}
	rec.checkDisjoint(t)
}

// A partition longer than the session timeout: the cut-off holder keeps
// serving only up to its confirmed ceiling, the successor starts above it,
// and after the heal the zombie learns that its lease is lost and its
// queued writes (resent on its new session) do not land.
func TestPartitionedHolder(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	rec := newRecorder()
	// The same address three times: go-zookeeper then resends queued calls
	// on the new session after expiry, which only the fence stops.
	a := startWorker(t, "A", pinned(testConfig(p.Addr(), p.Addr(), p.Addr()), testSlot), rec)
	a.waitReady(10 * time.Second)
	time.Sleep(300 * time.Millisecond)
	gA := a.c.Generator()
	p.Blackhole()
	// The zombie serves up to its confirmed ceiling, then stops by itself.
	waitFor(t, 10*time.Second, "cut-off holder stops at its ceiling", func() bool { return !a.c.Ready() })
	obs := observer(t, zs.Addr())
	b := startWorker(t, "B", pinned(testConfig(zs.Addr()), testSlot), rec)
	b.waitReady(15 * time.Second)
	time.Sleep(300 * time.Millisecond) // both issue (or try to) side by side
	if st := a.c.Status(); st.State != StateDisconnected && st.State != StateServing {
		t.Logf("zombie state during the partition: %s", st.State)
	}
	p.Heal()
	waitFor(t, 20*time.Second, "zombie learns its lease is lost", func() bool { return a.losses() >= 1 })
	if _, err := gA.Next(); err == nil {
		t.Fatal("zombie's generator still issues after the loss")
	}
	waitFor(t, 10*time.Second, "zombie stands by (its slot is held)", func() bool { return a.c.Status().State == StateStandby })
	time.Sleep(500 * time.Millisecond) // resent calls, if any, have been answered
	r, _ := readSlot(t, obs, "/snowflake", testSlot)
	if r.Holder != b.c.Status().LeaseNode {
		t.Fatalf("slot holder %q after heal, want the successor %q", r.Holder, b.c.Status().LeaseNode)
	}
	hs := rec.holdings(testSlot)
	if len(hs) < 2 {
		t.Fatalf("holdings %+v, want the zombie and the successor", hs)
	}
	if hs[0].max > gA.Ceiling() {
		t.Fatalf("zombie issued %d above its confirmed ceiling %d", hs[0].max, gA.Ceiling())
	}
	if hs[1].min <= gA.Ceiling() {
		t.Fatalf("successor started at %d, not above the zombie's ceiling %d", hs[1].min, gA.Ceiling())
	}
	rec.checkDisjoint(t)
}

// ZooKeeper restarted (same data dir) within the session timeout: the
// session, the lease node and the lease survive; the holder never stops
// holding and serves again once it renews.
func TestZooKeeperRestart(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	cfg := pinned(testConfig(zs.Addr()), testSlot)
	cfg.SessionTimeout = 6 * time.Second
	cfg.Horizon = 2 * time.Second
	a := startWorker(t, "A", cfg, rec)
	a.waitReady(10 * time.Second)
	before := a.c.Status()
	g := a.c.Generator()
	zs.Restart()
	obs := observer(t, zs.Addr())
	r0, _ := readSlot(t, obs, "/snowflake", testSlot)
	waitFor(t, 10*time.Second, "reservation renewed after the restart", func() bool {
		r, _ := readSlot(t, obs, "/snowflake", testSlot)
		return r.ReservedUntilMs > r0.ReservedUntilMs
	})
	a.waitReady(5 * time.Second)
	after := a.c.Status()
	if after.LeaseNode != before.LeaseNode || after.SessionID != before.SessionID || a.c.Generator() != g || a.losses() != 0 {
		t.Fatalf("lease did not survive the restart: before %+v after %+v losses %v", before, after, a.losses())
	}
	rec.checkDisjoint(t)
}

// Release with ZooKeeper unreachable is bounded in time, and leaves the
// stored reservation as it was: the successor waits it out.
func TestReleaseBoundedWhenUnreachable(t *testing.T) {
	zs := startZK(t)
	p := faultproxy.New(t, zs.Addr())
	rec := newRecorder()
	cfg := pinned(testConfig(p.Addr()), testSlot)
	a := startWorker(t, "A", cfg, rec)
	a.waitReady(10 * time.Second)
	time.Sleep(200 * time.Millisecond)
	p.Blackhole()
	obs := observer(t, zs.Addr())
	time.Sleep(100 * time.Millisecond)
	before, _ := readSlot(t, obs, "/snowflake", testSlot)
	start := time.Now()
	a.Stop()
	took := time.Since(start)
	t.Logf("release with zookeeper unreachable took %v (ReleaseTimeout %v)", took.Round(time.Millisecond), cfg.ReleaseTimeout)
	if took > cfg.ReleaseTimeout+5*time.Second {
		t.Fatalf("release took %v with ReleaseTimeout %v", took, cfg.ReleaseTimeout)
	}
	after, _ := readSlot(t, obs, "/snowflake", testSlot)
	if after.ReservedUntilMs < before.ReservedUntilMs {
		t.Fatalf("reservation went down from %d to %d without the holder reaching zookeeper", before.ReservedUntilMs, after.ReservedUntilMs)
	}
	b := startWorker(t, "B", pinned(testConfig(zs.Addr()), testSlot), rec)
	b.waitReady(15 * time.Second)
	time.Sleep(100 * time.Millisecond)
	rec.checkDisjoint(t)
}

// ErrBadVersion on renew: if the slot still names our lease node, our own
// unanswered write landed — adopt its version and reservation and keep the
// lease; if it names another holder, the lease is lost at once.
func TestBadVersionDecision(t *testing.T) {
	zs := startZK(t)
	rec := newRecorder()
	a := startWorker(t, "A", pinned(testConfig(zs.Addr()), testSlot), rec)
	a.waitReady(10 * time.Second)
	obs := observer(t, zs.Addr())
	g := a.c.Generator()
	node := a.c.Status().LeaseNode

	// As if a write of ours landed but its answer was lost: same holder, a
	// higher reservation, a new version. (A renew may write between our read
	// and our write: read again.)
	var landed int64
	setSlot(t, obs, func(r tree.SlotRecord) tree.SlotRecord {
		landed = r.ReservedUntilMs + 3000
		return tree.SlotRecord{ReservedUntilMs: landed, Holder: node, UpdatedMs: r.UpdatedMs}
	})
	waitFor(t, 5*time.Second, "landed reservation adopted", func() bool { return g.Ceiling() >= landed })
	if a.losses() != 0 || a.c.Generator() != g {
		t.Fatal("lease dropped although the slot still names us")
	}
	// Another holder wrote the slot: lost, sealed, node deleted.
	setSlot(t, obs, func(r tree.SlotRecord) tree.SlotRecord {
		return tree.SlotRecord{ReservedUntilMs: r.ReservedUntilMs + 1000, Holder: "someone-else"}
	})
	waitFor(t, 5*time.Second, "lease lost to another holder", func() bool { return a.losses() == 1 })
	if _, err := g.Next(); err == nil {
		t.Fatal("generator still issues after the lease was taken")
	}
	// The loss is counted as the generator is sealed; the node's delete
	// follows it.
	waitFor(t, 5*time.Second, "lost lease node deleted", func() bool {
		ok, _, err := obs.Exists(zklayout.LeasesPath("/snowflake") + "/" + node)
		return err == nil && !ok
	})
	rec.checkDisjoint(t)
}

// setSlot writes testSlot's record as edit makes it from the stored one, at
// the version read: a renew that wrote in between makes it read again.
func setSlot(t *testing.T, obs *zk.Conn, edit func(tree.SlotRecord) tree.SlotRecord) {
	t.Helper()
	for {
		r, _ := readSlot(t, obs, "/snowflake", testSlot)
		_, err := obs.Set(zklayout.SlotPath("/snowflake", testSlot), tree.EncodeSlot(edit(r)), r.Version)
		if err == nil {
			return
		}
		if !errors.Is(err, zk.ErrBadVersion) {
			t.Fatal(err)
		}
	}
}
