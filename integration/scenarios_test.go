//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

func scenarios() []scenario {
	const (
		stops   = "a worker stops, restarts or refuses: requests to it are retried on the others"
		ceiling = "with a standby waiting, holders reserve only the standby horizon ahead, reach their ceilings and refuse (-NOLEASE) until ZooKeeper answers again"
	)
	return []scenario{
		{letter: "a", title: "scale 3-8-2", workers: 3, retries: "scale-in stops workers with SIGTERM", run: scaleOutIn},
		{letter: "b", title: "kill -9 a worker", workers: 3, retries: stops, run: killWorker},
		{letter: "c", title: "pause a worker (zombie)", workers: 3, retries: stops, run: pauseWorker},
		{letter: "c2", title: "zombie wakes before its ceiling", workers: 3, retries: stops, run: zombieWakesEarly},
		{letter: "c3", title: "pause a worker, nobody waiting", workers: 3, retries: stops, run: pauseResume},
		{letter: "d", title: "cut a worker off ZooKeeper", workers: 3, retries: stops + "; the cut-off worker reaches its ceiling", run: partitionWorker},
		{letter: "e", title: "kill the ZooKeeper leader", workers: 3, retries: "", run: killZKLeader},
		{letter: "f", title: "stop 2 of 3 ZooKeeper nodes", workers: 3, retries: "", run: loseQuorum},
		{letter: "g1", title: "restart with the clock behind", workers: 3, retries: stops, run: clockBehindRestart},
		{letter: "g2", title: "clock steps back while serving (refuse)", workers: 3, retries: "the stepped worker refuses (-CLOCKBACK) until its clock catches up, and the added worker may while it claims", run: clockStepBack(snowflake.Refuse)},
		{letter: "g2l", title: "clock steps back while serving (logical)", workers: 3, retries: "the added worker may refuse a request while it claims", run: clockStepBack(snowflake.Logical)},
		{letter: "h", title: "rolling SIGTERM restart", workers: 3, retries: stops, run: rollingRestart},
		{letter: "i", title: "ZooKeeper partition, worker on the minority", workers: 3, retries: "the worker on the cut-off server may lose its session and re-claim", run: zkPartition},
		{letter: "j", title: "ZooKeeper slow (renews slower than the interval)", workers: 3, retries: "the proxied worker is stopped at the end", run: zkSlow},
		{letter: "k", title: "whole-ensemble restart", workers: 3, retries: ceiling, run: ensembleRestart},
		{letter: "l", title: "SIGTERM while ZooKeeper is down", workers: 3, retries: stops, run: sigtermZKDown},
		{letter: "m", title: "crashed worker's slot taken by another container", workers: 3, retries: stops, run: crashTakenOver},
		{letter: "n", title: "whole ensemble without a quorum for 25 s", workers: 3, retries: "", run: ensembleOutage},
		{letter: "o", title: "lease node deleted under its holder", workers: 3, retries: "the holder drops the lease and claims again", run: leaseNodeDeleted},
		{letter: "p", title: "slot node emptied by hand, then its holder killed", workers: 3, retries: stops, run: slotNodeEmptied},
		{letter: "q", title: "whole ensemble rebuilt empty, then init", workers: 3, retries: "every worker refuses (-NOLEASE) from its ceiling until init's reservation passes", run: ensembleRebuilt},
		{letter: "r", title: "ensemble restored from a copy a minute old, then recover", workers: 3, retries: "every worker refuses (-NOLEASE) until recover's reservation passes", run: ensembleRestored},
		{letter: "r2", title: "restore, then a recover that fails part-way, run again", workers: 3, retries: "every worker refuses (-NOLEASE) until the second recover's reservation passes", run: recoverInterrupted},
		{letter: "r3", title: "restore keeping sessions, a worker claiming again after others", workers: 3, retries: "the worker that lost its lease to the restore refuses (-NOLEASE) until recover's reservation passes", run: restoreKeepsSessions},
		{letter: "s", title: "embedded lease killed, paused, cut", workers: 3, retries: "each added standby worker refuses (-NOLEASE) until it takes the embedded lease's slot", run: embeddedFaults},
	}
}

// must fails the scenario on an error of the harness itself.
func (e env) must(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// fleet sets the number of workers and waits until they all serve, and
// until the ensemble has its three nodes.
func (e env) fleet(n int) {
	e.t.Helper()
	e.must(e.st.Scale(e.ctx, n), fmt.Sprintf("scale to %d", n))
	_, err := WaitServing(e.ctx, e.st, n, 60*time.Second)
	e.must(err, "fleet before the fault")
	e.must(e.st.WaitZK(e.ctx, 60*time.Second), "quorum before the fault")
}

// workers lists the worker containers.
func (e env) workers() []Container {
	e.t.Helper()
	ws, err := e.st.Workers(e.ctx)
	e.must(err, "list workers")
	return ws
}

func (e env) docker(args ...string) {
	e.t.Helper()
	_, err := docker(e.ctx, args...)
	e.must(err, "docker "+strings.Join(args, " "))
}

func (e env) sleep(d time.Duration) { _ = sleep(e.ctx, d) }

// fresh is c as docker sees it now: a container started again (docker
// start) has new published ports, and a Container read before still names
// the old ones.
func (e env) fresh(c Container) Container {
	ws, err := e.st.Workers(e.ctx)
	if err != nil {
		return c
	}
	for _, w := range ws {
		if w.ID == c.ID {
			return w
		}
	}
	return c
}

// status reads a worker's /status; an unreachable admin port fails the
// scenario (a check on a status it could not read would pass unseen).
func (e env) status(c Container) workerStatus {
	e.t.Helper()
	ws, err := e.st.Workers(e.ctx)
	e.must(err, "list workers")
	for _, w := range ws {
		if w.ID == c.ID {
			s, err := getStatus(e.ctx, w)
			e.must(err, "status of "+w.Short())
			return s
		}
	}
	e.t.Fatalf("status of %s: no such container", c.Short())
	return workerStatus{}
}

// waitFor polls cond every 100 ms until it holds or limit passes.
func (e env) waitFor(limit time.Duration, what string, cond func() bool) time.Duration {
	e.t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			e.t.Fatalf("%s: not after %v", what, limit)
		}
		e.sleep(100 * time.Millisecond)
	}
	return time.Since(start)
}

// standbyFor fills the datacenter's free slots, adds one worker, and waits
// until it stands by: the only slot it can take is the one a fault frees.
func (e env) standbyFor(n int) (*Placeholders, Container) {
	e.t.Helper()
	p, err := HoldFreeSlots(e.ctx, e.st)
	e.must(err, "hold the free slots")
	e.t.Cleanup(p.Release)
	e.must(e.st.Scale(e.ctx, n+1), "add a standby worker")
	var standby Container
	e.waitFor(30*time.Second, "a standby worker", func() bool {
		ws, err := e.st.Workers(e.ctx)
		if err != nil || len(ws) != n+1 {
			return false
		}
		standby = ws[n]
		s, _ := getStatus(e.ctx, standby)
		return s.State == coordinator.StateStandby
	})
	return p, standby
}

// disjoint checks the hand-over of slot from old to successor on the IDs
// their direct streams got.
func (e env) disjoint(old, successor Container, slot string) string {
	e.t.Helper()
	floor := e.status(successor).FloorMs
	note, problems := handover(old.Short(), successor.Short(), e.col.ContainerIDs(old.ID), e.col.ContainerIDs(successor.ID), slot, floor)
	for _, p := range problems {
		e.t.Errorf("hand-over: %s", p)
	}
	return note
}

// a: scale out to 8, then in to 2 (compose stops the extra ones with SIGTERM).
// The survivors never stop serving: no recovery is measured.
func scaleOutIn(e env) result {
	start := time.Now()
	e.must(e.st.Scale(e.ctx, 8), "scale to 8")
	_, err := WaitServing(e.ctx, e.st, 8, 60*time.Second)
	e.must(err, "8 workers")
	out := time.Since(start)
	up, err := e.prom.WaitAllUp(e.ctx, promUpBound)
	if err != nil {
		e.t.Errorf("at 8 workers: %v", err)
	}
	e.sleep(3 * time.Second)
	e.must(e.st.Scale(e.ctx, 2), "scale to 2")
	return result{want: 2, note: fmt.Sprintf("3→8 serving in %.1f s (%s); 8→2 by SIGTERM", out.Seconds(), up)}
}

// b: kill -9 a worker, start it again 3 s later.
func killWorker(e env) result {
	ws := e.workers()
	w := ws[0]
	s := e.status(w)
	fault := time.Now()
	e.docker("kill", "-s", "KILL", w.ID)
	e.sleep(3 * time.Second)
	e.docker("start", w.ID)
	return result{want: 3, fault: fault, outage: 3 * time.Second, note: fmt.Sprintf("killed %s (slot %s) for 3 s", w.Short(), s.Slot)}
}

// c: pause a worker past its session timeout and its ceiling: a standby
// takes its slot; on unpause the zombie must find its lease lost.
func pauseWorker(e env) result {
	ws := e.workers()
	w := ws[0]
	slot := e.status(w).Slot
	p, standby := e.standbyFor(3)
	e.shortened(w)
	fault := time.Now()
	e.docker("pause", w.ID)
	took := e.waitFor(sessionTimeout+standbyHorizon+15*time.Second, "the standby takes the paused worker's slot", func() bool {
		s, _ := getStatus(e.ctx, standby)
		return s.State == coordinator.StateServing && s.Slot == slot
	})
	back := time.Now()
	e.sleep(time.Second)
	e.docker("unpause", w.ID)
	e.sleep(3 * time.Second)
	z := e.status(w)
	if z.State == coordinator.StateServing && z.Slot == slot {
		e.t.Errorf("the unpaused zombie still serves %s", slot)
	}
	note := e.disjoint(w, standby, slot)
	p.Release()
	return result{want: 4, fault: fault, back: back,
		note: fmt.Sprintf("slot %s passed to the standby %.1f s after the pause; zombie then %s; %s", slot, took.Seconds(), z.State, note)}
}

// c3: pause a worker past its session timeout in a full datacenter with
// nobody waiting for its slot (#42): woken, it claims its own slot again
// at once from the last ID it issued, instead of waiting out the
// reservation it had itself written (the 40 s horizon).
func pauseResume(e env) result {
	w := e.workers()[0]
	p, err := HoldFreeSlots(e.ctx, e.st)
	e.must(err, "hold the datacenter's free slots")
	defer p.Release()
	before := e.status(w)
	fault := time.Now()
	e.docker("pause", w.ID)
	e.sleep(sessionTimeout + 2*time.Second) // ZooKeeper deletes its lease node
	e.docker("unpause", w.ID)
	took := e.waitFor(10*time.Second, "the woken worker serves its own slot again on a new lease", func() bool {
		s, err := getStatus(e.ctx, e.fresh(w))
		return err == nil && s.Ready && s.Slot == before.Slot && s.LeaseNode != before.LeaseNode
	})
	back := time.Now()
	after := e.status(w)
	if after.FloorMs >= before.CeilingMs {
		e.t.Errorf("the woken worker's floor %d is at its old ceiling %d: it waited out its own reservation", after.FloorMs, before.CeilingMs)
	}
	return result{want: 3, fault: fault, back: back,
		note: fmt.Sprintf("%s paused %v with every other slot of its datacenter held; woken, it served %s again %.1f s later under a new lease, from %d ms (its old ceiling %d ms)",
			w.Short(), sessionTimeout+2*time.Second, before.Slot, took.Seconds(), after.FloorMs, before.CeilingMs)}
}

// longHorizon is the horizon of the zombie in c2: longer than the session
// timeout (a legitimate setting, DESIGN §3), so that its lease expires
// while its ceiling is still seconds ahead. Not the default 40 s: the
// successor waits the ceiling out, and the scenario would take that long.
const longHorizon = 12 * time.Second

// c2: a holder with a horizon longer than its session timeout is paused
// until its lease node is gone, and woken at once, its ceiling still ahead:
// the dangerous window. It may serve up to that ceiling until it notices,
// never above it, and nothing after the floor its successor starts from
// (which is that ceiling: the successor waits it out).
func zombieWakesEarly(e env) result {
	// Its standby horizon as long, so that the standby waiting for its slot
	// does not shorten the reservation away (issue 15): the window is the
	// point here.
	e.must(e.st.ScaleWith(e.ctx, 4, "SNOWFLAKE_HORIZON="+longHorizon.String(), "SNOWFLAKE_STANDBY_HORIZON="+longHorizon.String()),
		"add a worker with a long horizon")
	var z Container
	var zs workerStatus
	e.waitFor(60*time.Second, "the long-horizon worker serves", func() bool {
		ws, err := e.st.Workers(e.ctx)
		if err != nil || len(ws) != 4 {
			return false
		}
		z = ws[3]
		zs, err = getStatus(e.ctx, z)
		return err == nil && zs.State == coordinator.StateServing
	})
	slot := zs.Slot
	p, standby := e.standbyFor(4)
	e.sleep(time.Second)
	conn, err := e.st.DialZK(e.ctx)
	e.must(err, "dial ZooKeeper")
	defer conn.Close()
	zs = e.status(z)
	lease := path.Join(zklayout.LeasesPath(zkRoot), zs.LeaseNode)
	fault := time.Now()
	e.docker("pause", z.ID)
	expired := e.waitFor(sessionTimeout+10*time.Second, "the paused holder's lease node goes", func() bool {
		ok, _, err := conn.Exists(lease)
		return err == nil && !ok
	})
	e.docker("unpause", z.ID)
	woke := time.Now()
	ceiling := e.mon.MaxCeiling(z.ID, zs.LeaseNode, time.Time{})
	ahead := ceiling - woke.UnixMilli()
	if ahead < 1000 {
		e.t.Errorf("the zombie woke %d ms before its ceiling %d: the early-wake window was not exercised", ahead, ceiling)
	}
	// The successor is the standby, or the zombie itself under a new lease:
	// woken, it claims at once while the standby's herd delay runs, and
	// either start is legitimate. What may not happen: an ID of the slot
	// from the zombie above its old ceiling and at or below the successor's
	// floor, or a floor below that ceiling.
	succ := standby
	took := e.waitFor(longHorizon+15*time.Second, "a successor serves the zombie's slot", func() bool {
		if s, _ := getStatus(e.ctx, standby); s.State == coordinator.StateServing && s.Slot == slot {
			succ = standby
			return true
		}
		if s, _ := getStatus(e.ctx, z); s.State == coordinator.StateServing && s.Slot == slot && s.LeaseNode != zs.LeaseNode {
			succ = z
			return true
		}
		return false
	})
	back := time.Now()
	e.sleep(2 * time.Second)
	floor := e.status(succ).FloorMs
	// The zombie that takes its own slot back before anyone wrote it
	// resumes from the last ID it issued (#42), below its old ceiling; any
	// other successor starts above that ceiling.
	resumed := succ.ID == z.ID && floor < ceiling
	if floor < ceiling && !resumed {
		e.t.Errorf("the successor's floor %d lies below the zombie's confirmed ceiling %d", floor, ceiling)
	}
	after := e.col.ContainerIDsSince(z.ID, woke)
	var n int
	var hi int64
	for _, id := range after {
		f, err := snowflake.Decode(id)
		if err != nil || (snowflake.Slot{Datacenter: f.Datacenter, Machine: f.Machine}).String() != slot {
			continue
		}
		if f.UnixMs > ceiling && f.UnixMs <= floor {
			e.t.Errorf("the zombie served ms %d on %s after waking: above its ceiling %d, not above the successor's floor %d", f.UnixMs, slot, ceiling, floor)
		}
		if f.UnixMs <= floor {
			n, hi = n+1, max(hi, f.UnixMs)
		}
	}
	if (succ.ID == standby.ID && e.status(z).Slot == slot) || (succ.ID == z.ID && e.status(standby).Slot == slot) {
		e.t.Errorf("the zombie and the standby both report slot %s", slot)
	}
	zz := e.status(z)
	if zz.LeaseNode == zs.LeaseNode {
		e.t.Errorf("the zombie still reports its lost lease %s (state %s)", zs.LeaseNode, zz.State)
	}
	note := "the zombie took its slot back under a new lease, its floor at its old ceiling"
	if resumed {
		note = "the zombie resumed its slot under a new lease from its last ID, nobody having held it"
	}
	if succ.ID == standby.ID {
		note = e.disjoint(z, standby, slot)
	}
	p.Release()
	return result{want: 5, fault: fault, back: back, outage: longHorizon,
		note: fmt.Sprintf("%s (horizon %v) paused; lease gone after %.1f s; woken %d ms before its ceiling; served %d IDs on %s after waking under its old lease; %s served %.1f s later; %s",
			z.Short(), longHorizon, expired.Seconds(), ahead, n, slot, succ.Short(), took.Seconds(), note)}
}

// d: disconnect a worker from the ZooKeeper network while clients still
// reach it on the front network; it serves up to its ceiling (the standby
// horizon ahead: the standby waits) and then refuses; the standby takes its
// slot after the session expires.
func partitionWorker(e env) result {
	ws := e.workers()
	w := ws[0]
	aw := e.watchAlerts(w, leaseAlerts...)
	p, standby := e.standbyFor(3)
	since := e.shortened(w)
	before := e.status(w)
	slot := before.Slot
	net := e.st.Network("zk")
	cut := time.Now()
	e.docker("network", "disconnect", net, w.ID)
	took := e.waitFor(sessionTimeout+standbyHorizon+15*time.Second, "the standby takes the cut-off worker's slot", func() bool {
		s, _ := getStatus(e.ctx, standby)
		return s.State == coordinator.StateServing && s.Slot == slot
	})
	back := time.Now()
	e.sleep(time.Second)
	after := e.status(w)
	if after.State == coordinator.StateServing && after.Ready {
		e.t.Errorf("the cut-off worker still serves %s while its successor does", slot)
	}
	// Served after the cut, up to the ceiling it had confirmed, and not
	// far short of it (it keeps serving while it is disconnected).
	ceiling := e.ceilingSince(w.ID, before.LeaseNode, since)
	_, hi, n := slotRange(e.col.ContainerIDsSince(w.ID, cut), slot)
	switch {
	case n == 0:
		e.t.Errorf("the cut-off worker served no ID on %s after the cut", slot)
	case hi > ceiling:
		e.t.Errorf("the cut-off worker served ms %d after the cut, above its ceiling %d", hi, ceiling)
	case hi < ceiling-1000:
		e.t.Errorf("the cut-off worker stopped at ms %d, %d ms short of its ceiling %d", hi, ceiling-hi, ceiling)
	}
	note := e.disjoint(w, standby, slot)
	// Up (Prometheus reaches it on front) and not ready: the cut is held
	// until the not-ready alert fires; back on ZooKeeper it finds its lease
	// lost.
	pn := aw.firing("SnowflakeWorkerNotReady", cut, "the cut", alertFor+20*time.Second)
	e.docker("network", "connect", net, w.ID)
	healed := time.Now()
	pn += ", " + aw.firing("SnowflakeLeaseLost", healed, "the reconnect", alertFor+20*time.Second)
	p.Release()
	pn += ", " + aw.resolved(healed, "the reconnect", alertWindow+alertFor+20*time.Second, leaseAlerts...)
	pn += "; " + aw.scrapes(time.Since(cut).Round(time.Second))
	return result{want: 4, fault: cut, back: back,
		note: fmt.Sprintf("slot %s passed on %.1f s after the cut; cut-off worker served %d IDs after the cut, the last %d ms below its ceiling, then %s; %s; Prometheus on %s: %s (%s)",
			slot, took.Seconds(), n, ceiling-hi, after.State, note, w.Short(), pn, aw.others(leaseAlerts...))}
}

func (e env) zkModes() (leader Container, others []Container) {
	e.t.Helper()
	zks, err := e.st.ZooKeepers(e.ctx)
	e.must(err, "list ZooKeeper")
	for _, z := range zks {
		if Mode(z.Addr("2181")) == "leader" {
			leader = z
		} else {
			others = append(others, z)
		}
	}
	if leader.ID == "" {
		e.t.Fatal("no ZooKeeper leader")
	}
	return leader, others
}

// e: kill the ZooKeeper leader; the others elect a new one. Workers serve on
// their confirmed ceilings meanwhile: an election shorter than the horizon
// must cost clients nothing, and no worker stops serving.
func killZKLeader(e env) result {
	before := e.col.snap()
	leader, others := e.zkModes()
	e.docker("kill", "-s", "KILL", leader.ID)
	election := e.waitFor(30*time.Second, "a new leader", func() bool {
		for _, z := range others {
			if Mode(z.Addr("2181")) == "leader" {
				return true
			}
		}
		return false
	})
	e.sleep(3 * time.Second)
	after := e.col.snap()
	e.docker("start", leader.ID)
	e.must(e.st.WaitZK(e.ctx, 60*time.Second), "quorum after the restart")
	if election < horizon-renew {
		if n := after.clientErrs - before.clientErrs; n > 0 {
			e.t.Errorf("the election took %v (< horizon %v) yet the Go client saw %d errors", election, horizon, n)
		}
		if n := after.redisErrs - before.redisErrs; n > 0 {
			e.t.Errorf("the election took %v (< horizon %v) yet workers refused or dropped %d direct calls", election, horizon, n)
		}
	}
	return result{want: 3, note: fmt.Sprintf("killed %s (leader); new leader in %.1f s; errors during it: %d client, %d direct",
		leader.Service, election.Seconds(), after.clientErrs-before.clientErrs, after.redisErrs-before.redisErrs)}
}

// requireChaosClock refuses to run a clock scenario on a worker whose
// image cannot move its clock (a WORKER_IMAGE not built with -tags chaos).
func (e env) requireChaosClock(w Container) {
	e.t.Helper()
	// The worker logs to stderr: read both streams.
	out, err := exec.CommandContext(e.ctx, "docker", "logs", w.ID).CombinedOutput()
	e.must(err, "logs of "+w.Short())
	if !strings.Contains(string(out), "the clock can be moved") {
		e.t.Fatalf("%s (image %s) does not log the chaos build's movable clock: the clock scenarios need an image built with -tags chaos", w.Short(), workerImage())
	}
}

// g1: kill -9 a worker, set its clock 5 s behind, start it: the only free
// slot is its former one, whose reservation is ahead of that clock. It must
// not issue a timestamp at or below the reservation.
func clockBehindRestart(e env) result {
	const offset = -5 * time.Second
	ws := e.workers()
	w := ws[0]
	e.requireChaosClock(w)
	slot := e.status(w).Slot
	p, err := HoldFreeSlots(e.ctx, e.st)
	e.must(err, "hold the free slots")
	e.t.Cleanup(p.Release)
	// A standby waits (a node of the suite's own), so the reservation the
	// worker finds lies the standby horizon ahead, not the full horizon:
	// with its clock 5 s behind, 45 s would exceed the claimer's wait
	// (MaxReservationWait) and it would never take the slot.
	sb := e.holdStandby()
	e.shortened(w)
	fault := time.Now()
	e.docker("kill", "-s", "KILL", w.ID)
	beforeKill := e.col.ContainerIDs(w.ID) // dead now: no more IDs come from it
	_, oldHi, _ := slotRange(beforeKill, slot)
	reserved := e.reservation(slot)
	e.must(e.st.CopyTo(e.ctx, w, "/chaos-clock", offset.String()+"\n"), "set the clock back")
	// Put right even when the scenario fails: a clock left behind would
	// turn g2's step back into a step forward.
	e.t.Cleanup(func() { _ = e.st.CopyTo(e.ctx, w, "/chaos-clock", "0s\n") })
	e.docker("start", w.ID)
	var s workerStatus
	e.waitFor(sessionTimeout+standbyHorizon+15*time.Second, "the restarted worker claims its former slot", func() bool {
		w = e.fresh(w) // started again: new published ports
		s, _ = getStatus(e.ctx, w)
		return s.Slot == slot && s.LeaseNode != ""
	})
	e.waitFor(15*time.Second, "the restarted worker serves", func() bool {
		s, _ = getStatus(e.ctx, w)
		return s.State == coordinator.StateServing
	})
	back := time.Now()
	e.sleep(2 * time.Second)
	s = e.status(w)
	// The offset took effect: the leader's mtime lies about 5 s ahead.
	if s.SkewMs < 4000 {
		e.t.Errorf("skew_ms %d with the clock set %v: the offset did not take effect", s.SkewMs, offset)
	}
	switch {
	case oldHi == 0:
		e.t.Errorf("%s served no ID on %s before the kill: nothing to hold the reservation to", w.Short(), slot)
	case reserved < oldHi:
		e.t.Errorf("%s's reservation %d after the kill lies below its last ms %d", slot, reserved, oldHi)
	}
	if s.FloorMs < reserved {
		e.t.Errorf("the restarted worker's floor %d on %s lies below the reservation %d it found", s.FloorMs, slot, reserved)
	}
	all := e.col.ContainerIDs(w.ID)
	newLo, _, newN := slotRange(all[len(beforeKill):], slot)
	if newN == 0 {
		e.t.Errorf("the restarted worker served no ID on %s", slot)
	} else if newLo <= reserved {
		e.t.Errorf("the restarted worker served ms %d on %s, not above the reservation %d it found", newLo, slot, reserved)
	}
	e.must(e.st.CopyTo(e.ctx, w, "/chaos-clock", "0s\n"), "put the clock right")
	p.Release()
	sb.Release()
	return result{want: 3, fault: fault, back: back, outage: -offset,
		note: fmt.Sprintf("%s back on %s with its clock %v (skew_ms %d): floor %d ≥ reservation %d ≥ last ms before the kill %d; first ms after %d (%d IDs)",
			w.Short(), slot, offset, s.SkewMs, s.FloorMs, reserved, oldHi, newLo, newN)}
}

// reservation reads reserved_until_ms of a slot.
func (e env) reservation(slot string) int64 {
	e.t.Helper()
	conn, err := e.st.DialZK(e.ctx)
	e.must(err, "dial ZooKeeper")
	defer conn.Close()
	sm, err := tree.ReadSlotMap(conn, zkRoot)
	e.must(err, "read the slot map")
	s, err := snowflake.ParseSlot(slot)
	e.must(err, "parse slot")
	return sm.Slots[s].ReservedUntilMs
}

// addWorker starts a fourth worker with extra environment and waits until
// it serves, ready; the scenario stops it (Scale 3) when done.
func (e env) addWorker(what string, extra ...string) Container {
	e.must(e.st.ScaleWith(e.ctx, 4, extra...), "add "+what)
	var w Container
	e.waitFor(60*time.Second, what+" serves", func() bool {
		ws, err := e.st.Workers(e.ctx)
		if err != nil || len(ws) != 4 {
			return false
		}
		w = ws[3]
		st, err := getStatus(e.ctx, w)
		return err == nil && st.State == coordinator.StateServing && st.Ready
	})
	return w
}

// g2, g2l: a worker added with --on-clock-back MODE and --max-skew above
// the step (as a real NTP correction of a clock that ran fast looks to the
// skew check) has its clock stepped back 2 s while serving. refuse: it
// answers -CLOCKBACK until its clock passes the last timestamp it issued,
// clients move to the others meanwhile. logical: it never refuses and
// stays ready, its IDs ahead of its clock (lead_ms) until the clock
// catches up; no client sees an error from it.
func clockStepBack(mode snowflake.ClockBackPolicy) func(env) result {
	return func(e env) result {
		const step = 2 * time.Second
		w := e.addWorker("a worker with --on-clock-back "+mode.String(), "SNOWFLAKE_ON_CLOCK_BACK="+mode.String(), "SNOWFLAKE_MAX_SKEW=5s")
		e.requireChaosClock(w)
		e.sleep(time.Second) // the direct stream finds it
		errsBefore := e.col.ContainerErrors(w.ID)
		fault := time.Now()
		e.must(e.st.CopyTo(e.ctx, w, "/chaos-clock", (-step).String()+"\n"), "step the clock back")
		var s workerStatus
		e.waitFor(5*time.Second, "skew_ms shows the step", func() bool {
			s, _ = getStatus(e.ctx, w)
			return s.SkewMs >= step.Milliseconds()*3/4
		})
		probes, refusals, maxLead := 0, 0, int64(0)
		var logical int64
		back := e.waitFor(step+15*time.Second, "the stepped worker serves, then its clock catches up", func() bool {
			err := serves(e.ctx, w.Addr("7609"))
			probes++
			if err != nil && (strings.Contains(err.Error(), "CLOCKBACK") || strings.Contains(err.Error(), "NOLEASE")) {
				refusals++
			}
			st, _ := getStatus(e.ctx, w)
			maxLead, logical = max(maxLead, st.LeadMs), max(logical, st.LogicalIssued)
			if mode == snowflake.Logical && !st.Ready && st.State == coordinator.StateServing {
				e.t.Errorf("%s not ready on a logical clock (lead %d ms)", w.Short(), st.LeadMs)
			}
			return err == nil && time.Since(fault) > step+500*time.Millisecond
		})
		errsAfter := e.col.ContainerErrors(w.ID)
		seen := 0
		for k, n := range errsAfter {
			seen += n - errsBefore[k]
		}
		e.must(e.st.CopyTo(e.ctx, w, "/chaos-clock", "0s\n"), "put the clock right")
		e.must(e.st.Scale(e.ctx, 3), "stop the added worker")
		switch mode {
		case snowflake.Refuse:
			if refusals+errsAfter["CLOCKBACK"]-errsBefore["CLOCKBACK"] == 0 {
				e.t.Errorf("%s answered no -CLOCKBACK after its clock stepped back %v", w.Short(), step)
			}
		case snowflake.Logical:
			if refusals != 0 || seen != 0 {
				e.t.Errorf("%s refused %d probes and its clients saw %d errors on a logical clock: want 0", w.Short(), refusals, seen)
			}
			if maxLead < step.Milliseconds()/2 || logical == 0 {
				e.t.Errorf("%s showed lead %d ms and %d IDs on logical time: the logical clock did not run", w.Short(), maxLead, logical)
			}
		}
		return result{want: 3, fault: fault, back: fault.Add(back), outage: step,
			note: fmt.Sprintf("%s (%s) stepped back %v: skew_ms %d, %d refusals of %d probes, %d client errors, lead up to %d ms, %d IDs on logical time; caught up after %.1f s",
				w.Short(), mode, step, s.SkewMs, refusals, probes, seen, maxLead, logical, back.Seconds())}
	}
}

// h: restart every worker in turn with SIGTERM (docker stop), each held to
// the bound from its stop until the fleet serves again.
func rollingRestart(e env) result {
	ws := e.workers()
	var worst time.Duration
	var fault time.Time
	for _, w := range ws {
		fault = time.Now()
		before := e.status(w)
		e.docker("stop", "-t", "10", w.ID)
		e.checkReleased(w, before)
		e.docker("start", w.ID)
		_, err := WaitServing(e.ctx, e.st, 3, recoveryBound+30*time.Second)
		e.must(err, "after restarting "+w.Short())
		d := time.Since(fault)
		if d > recoveryBound {
			e.t.Errorf("%s served again %v after its stop, bound %v", w.Short(), d.Round(100*time.Millisecond), recoveryBound)
		}
		worst = max(worst, d)
	}
	return result{want: 3, fault: fault, note: fmt.Sprintf("3 workers restarted in turn; slowest back %.1f s after its stop", worst.Seconds())}
}

// Every scenario has a letter of its own with its row in README.md, and
// every mutant case names letters that exist: the letters are what -run
// selects, the README's anchors and the mutation proof's scenarios. No
// Docker.
func TestScenarioLetters(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sc := range scenarios() {
		switch {
		case sc.letter == "" || strings.ContainsAny(sc.letter, " _"):
			t.Errorf("scenario %q: the letter %q is empty or would not select as one -run element", sc.name(), sc.letter)
		case seen[sc.letter]:
			t.Errorf("scenario %q: the letter %q is taken", sc.name(), sc.letter)
		case !strings.Contains(string(readme), "\n| "+sc.letter+" | "):
			t.Errorf("scenario %q: README.md has no row | %s |", sc.name(), sc.letter)
		}
		seen[sc.letter] = true
	}
	for _, mc := range mutantCases() {
		for _, l := range mc.scenarios {
			if !seen[l] {
				t.Errorf("mutant %s names scenario %q, which does not exist", mc.name, l)
			}
		}
	}
}
