package idlease

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// Open returns a ready lease of the fleet's datacenter; Next and NextN
// issue unique IDs of its slot inside its confirmed ceiling; the lease node
// says kind embedded and the program; Close releases, and the lease then
// issues nothing.
func TestEmbeddedOpenNextClose(t *testing.T) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, "/embed")
	l := openLease(t, testConfig("/embed", zs.Addr()), "A")
	slot, ok := l.Slot()
	if !ok || slot.Datacenter != testDC || !l.Ready() {
		t.Fatalf("after Open: slot %v held %v ready %v; want a ready lease in datacenter %d", slot, ok, l.Ready(), testDC)
	}
	ctx := context.Background()
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]int64, 0, 5000)
			for i := 0; i < 5000; i++ {
				id, err := l.Next(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				ids = append(ids, id)
			}
			first, err := l.NextN(ctx, 100)
			if err != nil {
				t.Error(err)
				return
			}
			for i := int64(0); i < 100; i++ {
				ids = append(ids, first+i)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if seen[id] {
					t.Errorf("ID %d issued twice", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
	ceiling := l.Status().CeilingMs
	for id := range seen {
		f := decode(t, id)
		if f.Slot() != slot || f.UnixMs > ceiling {
			t.Fatalf("ID %d is of slot %s at %d ms; want slot %s at most the confirmed ceiling %d", id, f.Slot(), f.UnixMs, slot, ceiling)
		}
	}
	if len(seen) != 4*5100 {
		t.Fatalf("%d unique IDs, want %d", len(seen), 4*5100)
	}
	if _, err := l.NextN(ctx, 0); err == nil {
		t.Fatal("NextN(0) issued")
	}
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if id, err := l.Next(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %d, %v; want ErrClosed", id, err)
	}
	if err := l.WaitReady(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitReady after Close: %v; want ErrClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

// Open gives up when its context ends before a slot is confirmed (every
// slot of the fleet held), says why, and leaves nothing of its own behind.
func TestEmbeddedOpenGivesUp(t *testing.T) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, "/full")
	block(t, obs, "/full", -1) // all 32 held
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	l, err := Open(ctx, testConfig("/full", zs.Addr()), testLogger(t, "A"), nil)
	var nr *NotReadyError
	if l != nil || !errors.As(err, &nr) || !errors.Is(err, ErrNotReady) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Open with every slot held: %v, %v; want a *NotReadyError matching ErrNotReady and DeadlineExceeded", l, err)
	}
	if nr.Readiness.Reason != coordinator.ReasonNoLease {
		t.Fatalf("reason %s, want %s", nr.Readiness.Reason, coordinator.ReasonNoLease)
	}
	t.Logf("open: %v", err)
	m, err := tree.ReadSlotMap(obs, "/full")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Leases) != 32 || len(m.Standbys) != 0 {
		t.Fatalf("after a failed Open: %d leases, %d standbys; want the 32 blockers and no standby of ours", len(m.Leases), len(m.Standbys))
	}
}

// A fault retrying cannot fix (pinned to a datacenter the root does not
// own) ends Open at once with ErrStopped, whatever time its context had.
func TestEmbeddedOpenStopsOnFault(t *testing.T) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, "/pinned")
	cfg := testConfig("/pinned", zs.Addr())
	cfg.Datacenter = testDC + 1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Open(ctx, cfg, testLogger(t, "A"), nil)
	if !errors.Is(err, ErrStopped) || !errors.Is(err, tree.ErrOutsideFleet) || ctx.Err() != nil {
		t.Fatalf("Open pinned outside the fleet: %v (ctx %v); want ErrStopped wrapping ErrOutsideFleet before the context ends", err, ctx.Err())
	}
}

// The lease is cut from ZooKeeper past its session timeout: Next stops at
// the confirmed ceiling (a caller with a short context gets a
// *NotReadyError), a caller with time to spare waits, and once the session
// is found expired and the slot claimed again it gets an ID of the new
// lease, above everything the old one could issue.
func TestEmbeddedWaitsThroughReclaim(t *testing.T) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, "/reclaim")
	block(t, obs, "/reclaim", 7)
	slot := snowflake.Slot{Datacenter: testDC, Machine: 7}
	p := faultproxy.New(t, zs.Addr())
	// The same address three times: go-zookeeper resends queued calls on
	// the new session after expiry, which the fence must stop.
	l := openLease(t, testConfig("/reclaim", p.Addr(), p.Addr(), p.Addr()), "A")
	ctx := context.Background()
	seen := map[int64]bool{}
	take := func(id int64) {
		if seen[id] {
			t.Fatalf("ID %d issued twice", id)
		}
		seen[id] = true
	}
	for i := 0; i < 1000; i++ {
		id, err := l.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		take(id)
	}
	before := l.Status()
	p.Blackhole()
	waitFor(t, 10*time.Second, "the cut-off lease stops at its ceiling", func() bool { return !l.Ready() })
	oldCeiling := l.Status().CeilingMs
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, err := l.Next(short)
	cancel()
	var nr *NotReadyError
	if !errors.As(err, &nr) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next past the ceiling with a short context: %v; want a *NotReadyError", err)
	}
	t.Logf("short wait: %v", err)
	type result struct {
		id  int64
		err error
	}
	waiting := make(chan result, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		id, err := l.Next(wctx)
		waiting <- result{id, err}
	}()
	// The server expires the session: its lease node goes.
	waitFor(t, 20*time.Second, "the cut-off lease node expires", func() bool {
		m, err := tree.ReadSlotMap(obs, "/reclaim")
		if err != nil {
			return false
		}
		for _, li := range m.Leases {
			if li.Node == before.LeaseNode {
				return false
			}
		}
		return true
	})
	select {
	case r := <-waiting:
		t.Fatalf("Next returned while the lease was expired and cut off: %d, %v", r.id, r.err)
	default:
	}
	p.Heal()
	var r result
	select {
	case r = <-waiting:
	case <-time.After(time.Minute):
		t.Fatal("the waiting Next never returned")
	}
	if r.err != nil {
		t.Fatalf("the waiting Next: %v", r.err)
	}
	take(r.id)
	after := l.Status()
	f := decode(t, r.id)
	if after.LeaseNode == before.LeaseNode || after.Losses < 1 {
		t.Fatalf("no new lease: before %s after %s losses %d", before.LeaseNode, after.LeaseNode, after.Losses)
	}
	if f.Slot() != slot || f.UnixMs <= oldCeiling || f.UnixMs > after.CeilingMs {
		t.Fatalf("ID of the wait %d: slot %s at %d ms; want slot %s above the old ceiling %d, at most the new one %d",
			r.id, f.Slot(), f.UnixMs, slot, oldCeiling, after.CeilingMs)
	}
	for i := 0; i < 1000; i++ {
		id, err := l.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		take(id)
	}
}

// Close releases the slot as a worker's SIGTERM does: the reservation is
// lowered to the last timestamp issued, so a successor claims the slot
// right above it rather than waiting out the ceiling, and the two issue
// disjoint IDs.
func TestEmbeddedCloseReleases(t *testing.T) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, "/release")
	block(t, obs, "/release", 9)
	slot := snowflake.Slot{Datacenter: testDC, Machine: 9}
	cfg := testConfig("/release", zs.Addr())
	a := openLease(t, cfg, "A")
	ctx := context.Background()
	seen := map[int64]bool{}
	var lastA int64
	for i := 0; i < 5000; i++ {
		id, err := a.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen[id] = true
		lastA = max(lastA, decode(t, id).UnixMs)
	}
	ceilingA := a.Status().CeilingMs
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if rec := slotRecord(t, obs, "/release", slot); rec.ReservedUntilMs != lastA || rec.LastMs != lastA {
		t.Fatalf("slot record after Close: reserved until %d, last %d; want both lowered to the last issued %d (the ceiling was %d)",
			rec.ReservedUntilMs, rec.LastMs, lastA, ceilingA)
	}
	b := openLease(t, cfg, "B")
	if s, _ := b.Slot(); s != slot || b.Status().FloorMs != lastA {
		t.Fatalf("successor: slot %s floor %d; want %s from the released %d", s, b.Status().FloorMs, slot, lastA)
	}
	for i := 0; i < 5000; i++ {
		id, err := b.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[id] || decode(t, id).UnixMs <= lastA {
			t.Fatalf("successor issued %d (at %d ms), not above the predecessor's last %d", id, decode(t, id).UnixMs, lastA)
		}
		seen[id] = true
	}
}

// The lease node says what holds it: the slot map reads kind embedded and
// the program beside a worker's kind worker, an embedded lease serves
// nothing (LeaseInfo.Serves), and each process exports the slot it holds
// with its kind, for Prometheus to count over the fleet.
func TestEmbeddedKindInSlotMap(t *testing.T) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, "/kinds")
	ereg := prometheus.NewRegistry()
	ectx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := Open(ectx, testConfig("/kinds", zs.Addr()), testLogger(t, "embedded"), ereg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	wcfg := testConfig("/kinds", zs.Addr()).Config
	wcfg.Kind, wcfg.Program, wcfg.Advertise = zklayout.KindWorker, "snowflaked", "127.0.0.1:7609"
	reg := prometheus.NewRegistry()
	w, err := coordinator.New(wcfg, testLogger(t, "worker"), reg)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(context.Background())
	var g sync.WaitGroup
	g.Add(1)
	go func() { defer g.Done(); _ = w.Run(wctx) }()
	defer g.Wait()
	defer stop()
	waitFor(t, 30*time.Second, "the worker serves", w.Ready)
	m, err := tree.ReadSlotMap(obs, "/kinds")
	if err != nil {
		t.Fatal(err)
	}
	es, _ := e.Slot()
	kinds := map[string]zklayout.LeaseInfo{}
	for _, li := range m.Leases {
		kinds[li.Kind] = li
	}
	if li := kinds[zklayout.KindEmbedded]; li.Slot != es || li.Program != "idlease-test" || li.Addr != "" || li.Serves() {
		t.Fatalf("embedded lease node read as %+v; want slot %s, program idlease-test, no address, serving nothing", li, es)
	}
	if li := kinds[zklayout.KindWorker]; li.Program != "snowflaked" || li.Addr != wcfg.Advertise || !li.Serves() {
		t.Fatalf("worker lease node read as %+v; want program snowflaked at %s, serving", li, wcfg.Advertise)
	}
	ws, _ := snowflake.ParseSlot(w.Status().Slot)
	for _, c := range []struct {
		reg  prometheus.Gatherer
		slot snowflake.Slot
		kind string
	}{{ereg, es, zklayout.KindEmbedded}, {reg, ws, zklayout.KindWorker}} {
		want := map[string]string{"root": "/kinds", "slot": c.slot.String(), "datacenter": strconv.Itoa(c.slot.Datacenter),
			"machine": strconv.Itoa(c.slot.Machine), "kind": c.kind}
		if got := labels(t, c.reg, "snowflake_coordinator_held_slot_info"); !maps.Equal(got, want) {
			t.Errorf("%s exports the slot it holds as %v; want %v", c.kind, got, want)
		}
	}
}

// The lease joins an oklog/run group: the group's end closes (releases)
// it, and execute returns nil.
func TestEmbeddedActor(t *testing.T) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, "/actor")
	l, err := New(testConfig("/actor", zs.Addr()), testLogger(t, "A"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	var g run.Group
	g.Add(l.Actor())
	g.Add(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		id, err = l.Next(ctx) // waits for the claim
		return err
	}, func(error) {})
	if err := g.Run(); err != nil || id == 0 {
		t.Fatalf("group: %v, ID %d", err, id)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("the lease still runs after its group ended")
	}
	if _, err := l.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after the group: %v; want ErrClosed", err)
	}
}

// ReadyHandler answers 503 with the reason before a claim, 200 once ready.
func TestEmbeddedReadyHandler(t *testing.T) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, "/ready")
	l, err := New(testConfig("/ready", zs.Addr()), testLogger(t, "A"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	get := func() (int, string) {
		rr := httptest.NewRecorder()
		l.ReadyHandler().ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rr.Code, rr.Body.String()
	}
	if code, body := get(); code != http.StatusServiceUnavailable || body != "no_lease (state stopped)\n" {
		t.Fatalf("before Start: %d %q", code, body)
	}
	l.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if code, body := get(); code != http.StatusOK {
		t.Fatalf("ready: %d %q", code, body)
	}
}

// Close unregisters what Open registered (#42 item 5): a program that
// closes its lease and opens another on the same registry (a reconnect, a
// test suite) used to fail with "duplicate metrics collector registration
// attempted". Two leases open at once on one registry still fail, naming
// the collision.
func TestEmbeddedReopenOnSameRegistry(t *testing.T) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, "/reopen")
	reg := prometheus.NewRegistry()
	cfg := testConfig("/reopen", zs.Addr())
	open := func(name string) (*Lease, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return Open(ctx, cfg, testLogger(t, name), reg)
	}
	a, err := open("A")
	if err != nil {
		t.Fatal(err)
	}
	if gauge(t, reg, "snowflake_coordinator_ready") != 1 {
		t.Fatal("A's readiness is not in the registry")
	}
	if b, err := open("B"); err == nil || !strings.Contains(err.Error(), "duplicate") {
		if b != nil {
			_ = b.Close()
		}
		t.Fatalf("a second lease on the registry while A is open: %v; want the duplicate registration refused", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := open("C")
	if err != nil {
		t.Fatalf("a lease opened again on the registry after Close: %v", err)
	}
	defer c.Close()
	if _, err := c.Next(context.Background()); err != nil || gauge(t, reg, "snowflake_coordinator_ready") != 1 {
		t.Fatalf("C: %v; want it issuing, its gauges in the registry", err)
	}
}
