package coordinator

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// copyDir copies a ZooKeeper data dir (the server stopped) as a backup.
func copyDir(t testing.TB, from, to string) {
	t.Helper()
	if out, err := exec.Command("rm", "-rf", to).CombinedOutput(); err != nil {
		t.Fatalf("rm %s: %v %s", to, err, out)
	}
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp %s %s: %v %s", from, to, err, out)
	}
}

// boundedFleet starts a ZooKeeper and makes the default root on it as a new
// fleet with max horizon horizon and max skew 500 ms, so that recover's
// reservation (the bound past its time) is seconds away, not 41 s.
func boundedFleet(t *testing.T, horizon time.Duration) (*zktest.Server, *zk.Conn) {
	t.Helper()
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	ic := tree.DefaultInitConfig()
	ic.NewFleet, ic.MaxHorizon, ic.MaxSkew = true, horizon, 500*time.Millisecond
	initRootT(t, obs, ic)
	return zs, obs
}

// holderAndProxiedStandby starts B holding z and W, behind a proxy and with
// a session of session, standing by for z once it has listed B's node.
func holderAndProxiedStandby(t *testing.T, zs *zktest.Server, z snowflake.Slot, rec *recorder, session time.Duration) (b, w *worker, p *faultproxy.Proxy, reg *prometheus.Registry) {
	t.Helper()
	b = startWorker(t, "B", pinned(testConfig(zs.Addr()), z), rec)
	b.waitReady(10 * time.Second)
	p = faultproxy.New(t, zs.Addr())
	cfgW := pinned(testConfig(p.Addr()), z)
	cfgW.SessionTimeout = session
	reg = prometheus.NewRegistry()
	w = startWorkerWith(t, "W", cfgW, rec, reg)
	waitFor(t, 10*time.Second, "W standing by for Z, having listed B's node", func() bool { return w.c.getState() == StateStandby })
	return b, w, p, reg
}

// ZooKeeper is restored from a backup taken before the holder of slot Z
// claimed it, while that holder (C), cut off from ZooKeeper, rides on its
// ceiling. The standby A, which saw C's lease node, is refused by the
// restored server (it has seen a later zxid; go-zookeeper would retry
// forever). A sees the refusal, opens a new session, and claims nothing
// until recover has raised every slot past what the fleet could have
// issued; then it serves Z, without a restart, above everything C issued.
// (Claiming at once from the restored tree gave A C's IDs again.)
func TestRestoreFromBackup(t *testing.T) {
	zs, obs := boundedFleet(t, 10*time.Second)
	obs.Close()
	backup := t.TempDir() + "/data"
	zs.Stop()
	copyDir(t, zs.DataDir(), backup)
	zs.Restart()

	z := snowflake.Slot{Datacenter: 9, Machine: 9}
	rec := newRecorder()
	p := faultproxy.New(t, zs.Addr())
	cfgC := pinned(testConfig(p.Addr()), z)
	cfgC.Horizon, cfgC.StandbyHorizon, cfgC.MaxClockLead = 8*time.Second, 0, time.Second
	c := startWorker(t, "C", cfgC, rec)
	c.waitReady(10 * time.Second)
	cfgA := pinned(testConfig(zs.Addr()), z)
	cfgA.MaxReservationWait = 15 * time.Second
	a := startWorker(t, "A", cfgA, rec)
	waitFor(t, 10*time.Second, "A standing by for Z", func() bool { return a.c.getState() == StateStandby })
	time.Sleep(300 * time.Millisecond)

	p.Blackhole() // C rides on its ceiling, up to 8 s ahead
	zs.Stop()
	copyDir(t, backup, zs.DataDir())
	zs.Restart()
	waitFor(t, 15*time.Second, "A sees the ensemble went back and waits for recover", a.c.awaitingRecover)
	if r := a.c.Readiness(); r.Reason != ReasonAwaitingRecover || r.State == StateDisconnected || !strings.HasPrefix(r.String(), "awaiting_recover") {
		t.Fatalf("A's readiness while it waits for recover: %s; want awaiting_recover, and not disconnected (it is connected)", r)
	}
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if a.c.Ready() || a.c.Generator() != nil {
			t.Fatal("A claimed from a rolled-back tree")
		}
	}

	obs = observer(t, zs.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := tree.RecoverRoot(ctx, obs, zklayout.DefaultRoot, tree.FleetACL{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Raised+res.Kept != snowflake.Slots || res.Marker == "" || res.Owned != tree.AllDatacenters {
		t.Fatalf("recover: %+v; want every slot raised or kept, a marker, every datacenter", res)
	}
	m, err := tree.ReadSlotMap(obs, zklayout.DefaultRoot)
	if err != nil {
		t.Fatal(err)
	}
	for s, r := range m.Slots {
		if r.ReservedUntilMs < res.ReservedUntilMs {
			t.Fatalf("slot %s reserved until %d after recover, below %d", s, r.ReservedUntilMs, res.ReservedUntilMs)
		}
	}
	waitFor(t, 20*time.Second, "A serving Z after recover, without a restart", a.c.Ready)
	// Ready and the first ID can be under a millisecond apart, and C's
	// ceiling has often passed by then: crashing A at once could leave it
	// nothing issued to check.
	waitFor(t, 10*time.Second, "A issuing on Z", func() bool {
		hs := rec.holdings(z)
		return len(hs) > 0 && hs[len(hs)-1].worker == "A"
	})
	waitFor(t, 10*time.Second, "C's ceiling passed", func() bool { return !c.c.Ready() })
	c.Crash()
	a.Crash()
	hs := rec.holdings(z)
	if len(hs) != 2 || hs[0].worker != "C" || hs[1].worker != "A" {
		t.Fatalf("holdings %+v: want C, then A", hs)
	}
	rec.checkDisjoint(t)
}

// recover refuses a missing root (the ensemble lost its data: init).
func TestRecoverMissingRoot(t *testing.T) {
	zs := startZK(t)
	obs := observer(t, zs.Addr())
	_, err := tree.RecoverRoot(context.Background(), obs, "/none", tree.FleetACL{})
	if err == nil || !strings.Contains(err.Error(), "snowflakectl init") {
		t.Fatalf("recover of a missing root: %v; want a refusal naming init", err)
	}
}

// The runbook's way through a restore (#37 item 4): workers shut out, the
// restore, recover, workers let in. A worker whose session survived and
// that sees the rollback only after recover ran (its new lease node is
// numbered below one it saw) claims at once: recover followed everything
// it knew. Before, it took the time of the lease node it had just made as
// its last confirmed write, and waited for a second recover. The rollback
// of leases/'s sequence is made here as a restore makes it, by a leases/
// whose child counter starts again (deleted and made anew), under the same
// root.
func TestRollbackSeenAfterRecoverClaimsAtOnce(t *testing.T) {
	zs, obs := boundedFleet(t, 3*time.Second)
	root := zklayout.DefaultRoot
	for range 5 { // a history of claims: sequences above what a restore brings back
		p, err := obs.CreateProtectedEphemeralSequential(zklayout.LeasesPath(root)+"/dc09-m09-", nil, zk.WorldACL(zk.PermAll))
		if err != nil {
			t.Fatal(err)
		}
		if err := obs.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}

	z := snowflake.Slot{Datacenter: 9, Machine: 9}
	rec := newRecorder()
	b, w, p, reg := holderAndProxiedStandby(t, zs, z, rec, 20*time.Second) // W survives the time shut out
	time.Sleep(300 * time.Millisecond)

	p.Blackhole() // W shut out
	b.Stop()
	if err := obs.Delete(zklayout.LeasesPath(root), -1); err != nil {
		t.Fatalf("leases/ after B released: %v", err)
	}
	if _, err := obs.Create(zklayout.LeasesPath(root), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tree.RecoverRoot(ctx, obs, root, tree.FleetACL{}); err != nil {
		t.Fatal(err)
	}
	p.Heal() // W let in
	waitFor(t, 10*time.Second, "W noticing the rollback", func() bool {
		return counterValue(t, reg, "snowflake_coordinator_rollbacks_detected_total", "", "") > 0
	})
	waitFor(t, 15*time.Second, "W serving Z after the recover that preceded its return, without a second one", w.c.Ready)
	w.Crash()
	rec.checkDisjoint(t)
}

// A restore the lease sequences do not show (#37 item 2): ZooKeeper is
// restored from a backup that holds W's session, taken while W stood by for
// Z, after W claimed Z and renewed it. W's session survives the restore, so
// the ensemble does not refuse it; other clients' creates since the restore
// number leases/ above everything W saw. W's lease node is gone from the
// restored tree, so its lease is lost; before it claims again it reads Z,
// finds the same node at a version below the one its last write gave it,
// and waits for recover instead of claiming from the rolled-back record.
func TestRestoreSeenInTheLostSlotsVersion(t *testing.T) {
	zs, obs := boundedFleet(t, 10*time.Second)
	root := zklayout.DefaultRoot
	z := snowflake.Slot{Datacenter: 9, Machine: 9}
	rec := newRecorder()
	b, w, p, reg := holderAndProxiedStandby(t, zs, z, rec, 30*time.Second) // W outlives both restarts
	time.Sleep(300 * time.Millisecond)

	obs.Close()
	backup := t.TempDir() + "/data"
	zs.Stop() // the backup: W's session in it, W holding nothing
	copyDir(t, zs.DataDir(), backup)
	zs.Restart()
	b.Stop() // B releases; W claims Z and renews it
	w.waitReady(20 * time.Second)
	time.Sleep(time.Second)
	lastW := w.c.Status()
	if lastW.Slot != z.String() {
		t.Fatalf("W holds %q, want %s", lastW.Slot, z)
	}

	p.Blackhole()
	zs.Stop()
	copyDir(t, backup, zs.DataDir())
	zs.Restart()
	obs = observer(t, zs.Addr())
	// Other clients move the ensemble on: past the zxid W has seen, and
	// leases/ numbered past every lease node W saw.
	for i := range 200 {
		if i < 40 {
			n, err := obs.CreateProtectedEphemeralSequential(zklayout.LeasesPath(root)+"/dc31-m31-", nil, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
			if err := obs.Delete(n, -1); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if _, err := obs.Create("/bump", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if err := obs.Delete("/bump", -1); err != nil {
			t.Fatal(err)
		}
	}
	p.Heal()
	waitFor(t, 20*time.Second, "W sees the rollback in its lost slot's version and waits for recover", w.c.awaitingRecover)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if w.c.Ready() {
			t.Fatal("W claimed from a rolled-back tree")
		}
	}
	if n := counterValue(t, reg, "snowflake_coordinator_rollbacks_detected_total", "", ""); n < 1 {
		t.Fatalf("rollbacks_detected_total = %v, want at least 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tree.RecoverRoot(ctx, obs, root, tree.FleetACL{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "W serving Z after recover", w.c.Ready)
	if f := w.c.Status().FloorMs; f <= lastW.LastIssuedMs {
		t.Fatalf("W claimed again from %d, not above the %d it had issued", f, lastW.LastIssuedMs)
	}
	w.Crash()
	rec.checkDisjoint(t)
}

// A lease node made with a chosen name (a plain create, numbered far past
// leases/' counter) is no sign of a restore (#37 item 5): before, every
// worker that listed it took its own next lease node, numbered below it,
// for a rollback and waited for a recover that nothing called for.
func TestForgedLeaseSequenceFreezesNothing(t *testing.T) {
	zs := startZK(t)
	cfg := testConfig(zs.Addr())
	initFleet(t, cfg)
	obs := observer(t, zs.Addr())
	forged := zklayout.LeasesPath(zklayout.DefaultRoot) + "/" + tree.ProtectedPrefix + tree.NewGUID() + "-dc31-m31-2000000000"
	if _, err := obs.Create(forged, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	a := startWorkerWith(t, "A", pinned(cfg, testSlot), nil, reg)
	a.waitReady(10 * time.Second)
	if n := counterValue(t, reg, "snowflake_coordinator_rollbacks_detected_total", "", ""); n != 0 {
		t.Fatalf("rollbacks_detected_total = %v: the forged node was taken for a restore", n)
	}
	if n := counterValue(t, reg, "snowflake_coordinator_forged_lease_nodes_total", "", ""); n != 1 {
		t.Fatalf("forged_lease_nodes_total = %v, want 1 (said once)", n)
	}
}

// A slot reserved far past anything a holder, init or recover writes (by
// hand, or forged by anyone who can write the node) is damage (#37 item
// 5): avoided, logged and counted as a slot node that does not decode,
// never waited for. Before, a claimer took it for a slot reserved ahead and
// waited for its date, a year off: the slot frozen.
func TestReservationBeyondBoundIsDamage(t *testing.T) {
	zs := startZK(t)
	cfg := testConfig(zs.Addr())
	initFleet(t, cfg)
	obs := observer(t, zs.Addr())
	year := time.Now().Add(365 * 24 * time.Hour).UnixMilli()
	setSlot(t, obs, func(r tree.SlotRecord) tree.SlotRecord { r.ReservedUntilMs = year; return r })
	reg := prometheus.NewRegistry()
	a := startWorkerWith(t, "A", pinned(cfg, testSlot), nil, reg)
	waitFor(t, 10*time.Second, "A finds the slot damaged", func() bool {
		return counterValue(t, reg, "snowflake_coordinator_slot_undecodable_total", "", "") >= 1
	})
	if r := a.c.Readiness(); r.Reason == ReasonReserved {
		t.Fatalf("A's readiness %s: it waits for a reservation no holder could have written", r)
	}
	if a.c.Ready() {
		t.Fatal("A serves a slot reserved a year ahead")
	}
}

// A restore that keeps a holder's session and lease node (#37): ZooKeeper
// is restored from a backup taken while W held Z, after which W renewed
// it. W, cut off during the restore and let back in, keeps its session
// (the ensemble has moved past the zxid W saw) and its lease node; its
// renew meets Z's node, still naming W's lease, at a version below its
// own. W serves on, its own slot being safe, but says and counts the
// rollback at once (before: it adopted the old version silently), and once
// that lease ends it claims nothing until recover has run.
func TestRestoreSeenByAHolderWhoseLeaseSurvived(t *testing.T) {
	zs, obs := boundedFleet(t, 10*time.Second)
	root := zklayout.DefaultRoot
	z := snowflake.Slot{Datacenter: 9, Machine: 9}
	rec := newRecorder()
	p := faultproxy.New(t, zs.Addr())
	cfgW := pinned(testConfig(p.Addr()), z)
	cfgW.SessionTimeout = 30 * time.Second // W's session outlives both restarts
	reg := prometheus.NewRegistry()
	w := startWorkerWith(t, "W", cfgW, rec, reg)
	w.waitReady(10 * time.Second)
	time.Sleep(500 * time.Millisecond)

	obs.Close()
	backup := t.TempDir() + "/data"
	zs.Stop() // the backup: W holding Z, its session and node in it
	copyDir(t, zs.DataDir(), backup)
	zs.Restart()
	time.Sleep(2 * time.Second) // renews: Z's version moves past the backup's
	lastW := w.c.Status()

	p.Blackhole()
	zs.Stop()
	copyDir(t, backup, zs.DataDir())
	zs.Restart()
	obs = observer(t, zs.Addr())
	for range 200 { // past the zxid W has seen: its session is not refused
		if _, err := obs.Create("/bump", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		if err := obs.Delete("/bump", -1); err != nil {
			t.Fatal(err)
		}
	}
	p.Heal()
	waitFor(t, 20*time.Second, "W sees its held slot went back", func() bool {
		return counterValue(t, reg, "snowflake_coordinator_rollbacks_detected_total", "", "") > 0
	})
	// The renew that met the old version confirms right after it, on a
	// loaded machine past the ceiling the outage outlasted: ready then.
	waitFor(t, 5*time.Second, "W serves again after the restore", w.c.Ready)
	if s := w.c.Status(); !w.c.Ready() || s.LeaseNode != lastW.LeaseNode {
		t.Fatalf("W after the restore: %+v, ready %v; want it serving on its lease %s, which the restore kept", s, w.c.Ready(), lastW.LeaseNode)
	}

	if err := obs.Delete(zklayout.LeasesPath(root)+"/"+lastW.LeaseNode, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "W, its lease ended, waits for recover", w.c.awaitingRecover)
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if w.c.Ready() {
			t.Fatal("W claimed again from a tree it had seen go back")
		}
	}
	if n := counterValue(t, reg, "snowflake_coordinator_rollbacks_detected_total", "", ""); n != 1 {
		t.Fatalf("rollbacks_detected_total = %v, want 1: one rollback, said once", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := tree.RecoverRoot(ctx, obs, root, tree.FleetACL{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "W serving Z after recover", w.c.Ready)
	w.Crash()
	rec.checkDisjoint(t)
}
