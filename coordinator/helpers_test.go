package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// testConfig is a fast lease: session 2s, renew 200ms, horizon 1s.
func testConfig(servers ...string) Config {
	cfg := DefaultConfig()
	cfg.Servers = servers
	cfg.Insecure = true // tests that need credentials set Auth
	cfg.SessionTimeout = 2 * time.Second
	cfg.Renew = 200 * time.Millisecond
	cfg.Horizon = time.Second
	cfg.MaxReservationWait = 5 * time.Second
	cfg.ReleaseTimeout = time.Second
	cfg.MaxSkew = 500 * time.Millisecond
	return cfg
}

// insecureDefault is DefaultConfig allowed to run without credentials.
func insecureDefault() Config {
	cfg := DefaultConfig()
	cfg.Insecure = true
	return cfg
}

// testClock is the real clock shifted by an offset the test moves.
type testClock struct{ offset atomic.Int64 }

func (c *testClock) UnixNano() int64       { return time.Now().UnixNano() + c.offset.Load() }
func (c *testClock) Sleep(d time.Duration) { snowflake.SystemClock{}.Sleep(d) }
func (c *testClock) Shift(d time.Duration) { c.offset.Add(int64(d)) }

func testLogger(t testing.TB, name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: name, Level: hclog.Info, Output: testWriter{t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

// worker is a running Coordinator with an issuer that takes an ID about
// every millisecond from whatever generator the coordinator holds.
type worker struct {
	t      testing.TB
	name   string
	c      *Coordinator
	cancel context.CancelFunc
	done   chan error
	rec    *recorder
	// issuing is cleared to stop the issuer, as a crashed process would.
	issuing  atomic.Bool
	issuerWG sync.WaitGroup
	stopOnce sync.Once
}

func startWorker(t testing.TB, name string, cfg workerConfig, rec *recorder) *worker {
	t.Helper()
	return startWorkerWith(t, name, cfg, rec, nil)
}

// startWorkerWith is startWorker with the coordinator's metrics registered
// in reg.
func startWorkerWith(t testing.TB, name string, cfg workerConfig, rec *recorder, reg prometheus.Registerer) *worker {
	t.Helper()
	return startWorkerLogged(t, name, cfg, rec, reg, testLogger(t, name))
}

// startWorkerLogged is startWorkerWith logging to log. Workers never make
// their root: a root that does not exist yet is made first, as
// snowflakectl init --new-fleet does (startWorkerBare does not).
func startWorkerLogged(t testing.TB, name string, cfg workerConfig, rec *recorder, reg prometheus.Registerer, log hclog.Logger) *worker {
	t.Helper()
	base, _ := cfg.split()
	initFleet(t, base)
	return startWorkerBare(t, name, cfg, rec, reg, log)
}

// initFleet makes cfg.Root owning every datacenter as a new fleet, unless
// a root is there already (whatever it holds: the test may be about it).
func initFleet(t testing.TB, cfg Config) {
	t.Helper()
	conn, err := zkconn.DialTLS(cfg.Servers, cfg.Auth, cfg.TLS, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ok, err := zkconn.CallResult(ctx, "init", func(ok *bool) (err error) { *ok, _, err = conn.Exists(cfg.Root); return })
	if err != nil {
		t.Fatalf("init %s: %v", cfg.Root, err)
	}
	scheme, _ := tree.NewFleetACL(cfg.Auth, cfg.Auth)
	if ok {
		registerAsIs(t, conn, scheme, cfg.Root)
		return
	}
	ic := tree.DefaultInitConfig()
	ic.Root, ic.NewFleet, ic.ACL = cfg.Root, true, scheme
	// Generous bounds: a new fleet does not pay for them, and the test's
	// later workers may run with a wider MaxSkew or Horizon.
	ic.MaxHorizon, ic.MaxSkew = max(cfg.Horizon, tree.DefaultMaxHorizon), 24*time.Hour
	if _, err := tree.InitRoot(ctx, conn, ic); err != nil {
		t.Fatalf("init %s: %v", cfg.Root, err)
	}
}

// startWorkerBare is startWorkerLogged without making the root.
func startWorkerBare(t testing.TB, name string, cfg workerConfig, rec *recorder, reg prometheus.Registerer, log hclog.Logger) *worker {
	t.Helper()
	base, slots := cfg.split()
	c, err := New(base, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	if slots != nil {
		c.space = slots
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{t: t, name: name, c: c, cancel: cancel, done: make(chan error, 1), rec: rec}
	go func() { w.done <- c.Run(ctx) }()
	if rec != nil {
		w.issuing.Store(true)
		w.issuerWG.Add(1)
		go w.issue()
	}
	t.Cleanup(w.Stop)
	return w
}

func (w *worker) issue() {
	defer w.issuerWG.Done()
	for w.issuing.Load() {
		g := w.c.Generator()
		if g == nil {
			time.Sleep(time.Millisecond)
			continue
		}
		id, err := g.Next()
		if err != nil {
			time.Sleep(time.Millisecond)
			continue
		}
		w.rec.add(w.name, g, id)
		time.Sleep(w.rec.pace)
	}
}

// Crash stops issuing at once, as a killed process would (its session stays
// until cut off by the caller).
func (w *worker) Crash() {
	w.issuing.Store(false)
	w.issuerWG.Wait()
}

// Stop cancels Run (seal and release) and waits for it. Safe twice.
func (w *worker) Stop() { w.stopOnce.Do(w.stop) }

func (w *worker) stop() {
	w.issuing.Store(false)
	w.issuerWG.Wait()
	w.cancel()
	select {
	case err, ok := <-w.done:
		if ok && err != nil {
			w.t.Errorf("%s: Run: %v", w.name, err)
		}
	case <-time.After(15 * time.Second):
		w.t.Errorf("%s: Run did not return 15s after cancel", w.name)
	}
}

// waitFor polls cond every 20ms until it holds or within passes.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *worker) waitReady(within time.Duration) {
	w.t.Helper()
	waitFor(w.t, within, w.name+" ready", w.c.Ready)
}

// holding is what one generator (one lease of one worker) issued.
type holding struct {
	worker   string
	gen      *snowflake.Generator
	slot     snowflake.Slot
	min, max int64 // unix ms of the IDs
	n        int
	order    int // first-issue order across holdings
}

// recorder keeps, per generator, the interval of timestamps it issued.
type recorder struct {
	mu   sync.Mutex
	hold map[*snowflake.Generator]*holding
	ids  map[int64]bool
	// pace is the issuers' pause between IDs.
	pace time.Duration
}

func newRecorder() *recorder {
	return &recorder{hold: map[*snowflake.Generator]*holding{}, ids: map[int64]bool{}, pace: 500 * time.Microsecond}
}

func (r *recorder) add(worker string, g *snowflake.Generator, id int64) {
	f, err := snowflake.Decode(id)
	if err != nil {
		panic(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids[id] {
		panic(fmt.Sprintf("duplicate ID %d from %s", id, worker))
	}
	r.ids[id] = true
	h := r.hold[g]
	if h == nil {
		h = &holding{worker: worker, gen: g, slot: f.Slot(), min: f.UnixMs, max: f.UnixMs, order: len(r.hold)}
		r.hold[g] = h
	}
	h.min, h.max = min(h.min, f.UnixMs), max(h.max, f.UnixMs)
	h.n++
}

// holdings of one slot, in the order they first issued.
func (r *recorder) holdings(s snowflake.Slot) []holding {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []holding
	for _, h := range r.hold {
		if h.slot == s {
			out = append(out, *h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}

// checkDisjoint asserts the invariant itself: for every slot, the
// timestamp intervals of successive holders never overlap, and each
// holder's IDs are within its generator's ceiling.
func (r *recorder) checkDisjoint(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	slots := map[snowflake.Slot]bool{}
	for _, h := range r.hold {
		slots[h.slot] = true
	}
	r.mu.Unlock()
	for s := range slots {
		hs := r.holdings(s)
		for i, h := range hs {
			if h.max > h.gen.Ceiling() {
				t.Errorf("slot %s: %s issued %d, above its confirmed ceiling %d", s, h.worker, h.max, h.gen.Ceiling())
			}
			if i > 0 && h.min <= hs[i-1].max {
				t.Errorf("slot %s: holder %s issued from %d, not above predecessor %s's last %d: intervals overlap",
					s, h.worker, h.min, hs[i-1].worker, hs[i-1].max)
			}
			for j := 0; j < i; j++ {
				if h.min <= hs[j].max && hs[j].min <= h.max {
					t.Errorf("slot %s: intervals of %s [%d,%d] and %s [%d,%d] overlap",
						s, hs[j].worker, hs[j].min, hs[j].max, h.worker, h.min, h.max)
				}
			}
		}
	}
}

// observer is a plain session on the server for the test's own reads.
func observer(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	conn, err := zkconn.Dial([]string{addr}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

func readSlot(t testing.TB, conn *zk.Conn, root string, s snowflake.Slot) (tree.SlotRecord, bool) {
	t.Helper()
	data, st, err := conn.Get(zklayout.SlotPath(root, s))
	if err == zk.ErrNoNode {
		return tree.SlotRecord{}, false
	}
	if err != nil {
		t.Fatalf("read slot %s: %v", s, err)
	}
	rec, err := tree.DecodeSlot(data)
	if err != nil {
		t.Fatal(err)
	}
	rec.Version, rec.MtimeMs = st.Version, st.Mtime
	return rec, true
}

func startZK(t testing.TB) *zktest.Server { return zktest.Start(t) }

// gaugeValue is the value of the unlabelled gauge name as reg exports it.
func gaugeValue(t testing.TB, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("registry exports no gauge %s", name)
	return 0
}

// makeRoot makes root as a worker would (layout v2): its JSON, leases/,
// slots/ and every slot node, so a test can then edit one by hand.
func makeRoot(t testing.TB, obs *zk.Conn, root string, acl []zk.ACL) {
	t.Helper()
	if _, err := obs.Create(root, tree.EncodeRoot(tree.CurrentRootInfo(time.Now())), 0, acl); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{zklayout.LeasesPath(root), zklayout.SlotsPath(root)} {
		if _, err := obs.Create(p, nil, 0, acl); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UnixMilli()
	if _, err := tree.CreateSlotNodes(obs, root, acl, nil, tree.SlotRecord{ReservedUntilMs: now, UpdatedMs: now}); err != nil {
		t.Fatal(err)
	}
}

// standbyDir gives root's standby/ (made by init) the ACL acl, making it
// if it is missing.
func standbyDir(obs *zk.Conn, root string, acl []zk.ACL) error {
	_, err := obs.Create(tree.StandbyPath(root), nil, 0, acl)
	if errors.Is(err, zk.ErrNodeExists) {
		_, err = obs.SetACL(tree.StandbyPath(root), acl, -1)
	}
	return err
}

// registerAsIs enters a root the test made by hand in the fleet registry,
// as init does for a root it finds, when the root reads as a finished
// one: the test is about what the root holds, not about the registry.
func registerAsIs(t testing.TB, conn *zk.Conn, scheme tree.FleetACL, root string) {
	t.Helper()
	data, _, err := conn.Get(root)
	if err != nil {
		return
	}
	info, err := tree.DecodeRoot(root, data)
	if err != nil || info.Filling() {
		return
	}
	if _, err := info.Owned(); err != nil {
		return
	}
	if err := tree.Register(conn, scheme, root, info); err != nil {
		t.Logf("register %s as it is: %v", root, err)
	}
}
