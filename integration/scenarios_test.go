//go:build integration

package integration

import (
	"fmt"
	"strings"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/snowflake"
)

func scenarios() []scenario {
	return []scenario{
		{"a scale 3-8-2", 3, scaleOutIn},
		{"b kill -9 a worker", 3, killWorker},
		{"c pause a worker (zombie)", 3, pauseWorker},
		{"d cut a worker off ZooKeeper", 3, partitionWorker},
		{"e kill the ZooKeeper leader", 3, killZKLeader},
		{"f stop 2 of 3 ZooKeeper nodes", 3, loseQuorum},
		{"g1 restart with the clock behind", 3, clockBehindRestart},
		{"g2 clock steps back while serving", 3, clockStepBack},
		{"h rolling SIGTERM restart", 3, rollingRestart},
		outageScenario, // outage_test.go
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

func (e env) status(c Container) workerStatus {
	e.t.Helper()
	ws, err := e.st.Workers(e.ctx)
	e.must(err, "list workers")
	for _, w := range ws {
		if w.ID == c.ID {
			s, _ := getStatus(e.ctx, w)
			return s
		}
	}
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
	e.shortened(n)
	return p, standby
}

// disjoint checks that the old holder of slot served only timestamps at or
// below the floor its successor started from, and the successor only above.
func (e env) disjoint(old, successor Container, slot string) string {
	e.t.Helper()
	floor := e.status(successor).FloorMs
	_, oldHi, oldN := slotRange(e.col.ContainerIDs(old.ID), slot)
	newLo, _, newN := slotRange(e.col.ContainerIDs(successor.ID), slot)
	if floor == 0 {
		e.t.Errorf("successor %s reports no floor", successor.Short())
	}
	if oldN > 0 && oldHi > floor {
		e.t.Errorf("old holder %s served ms %d on %s, above its successor's floor %d", old.Short(), oldHi, slot, floor)
	}
	if newN > 0 && newLo <= floor {
		e.t.Errorf("successor %s served ms %d on %s, not above its floor %d", successor.Short(), newLo, slot, floor)
	}
	return fmt.Sprintf("old holder's last ms %d ≤ floor %d < successor's first %d (%d and %d IDs)", oldHi, floor, newLo, oldN, newN)
}

// a: scale out to 8, then in to 2 (compose stops the extra ones with SIGTERM).
func scaleOutIn(e env) (int, time.Time, string) {
	start := time.Now()
	e.must(e.st.Scale(e.ctx, 8), "scale to 8")
	_, err := WaitServing(e.ctx, e.st, 8, 60*time.Second)
	e.must(err, "8 workers")
	out := time.Since(start)
	e.sleep(3 * time.Second)
	healed := time.Now()
	e.must(e.st.Scale(e.ctx, 2), "scale to 2")
	return 2, healed, fmt.Sprintf("3→8 serving in %.1f s; 8→2 by SIGTERM", out.Seconds())
}

// b: kill -9 a worker, start it again.
func killWorker(e env) (int, time.Time, string) {
	ws := e.workers()
	w := ws[0]
	s := e.status(w)
	e.docker("kill", "-s", "KILL", w.ID)
	e.sleep(3 * time.Second)
	healed := time.Now()
	e.docker("start", w.ID)
	return 3, healed, fmt.Sprintf("killed %s (slot %s) for 3 s", w.Short(), s.Slot)
}

// c: pause a worker past its session timeout: a standby takes its slot; on
// unpause the zombie must find its lease lost and serve nothing above the
// ceiling it had confirmed (a duplicate or an out-of-order ID would show).
func pauseWorker(e env) (int, time.Time, string) {
	ws := e.workers()
	w := ws[0]
	slot := e.status(w).Slot
	p, standby := e.standbyFor(3)
	e.docker("pause", w.ID)
	took := e.waitFor(sessionTimeout+standbyHorizon+15*time.Second, "the standby takes the paused worker's slot", func() bool {
		s, _ := getStatus(e.ctx, standby)
		return s.State == coordinator.StateServing && s.Slot == slot
	})
	e.sleep(time.Second)
	e.docker("unpause", w.ID)
	e.sleep(3 * time.Second)
	z := e.status(w)
	if z.State == coordinator.StateServing && z.Slot == slot {
		e.t.Errorf("the unpaused zombie still serves %s", slot)
	}
	note := e.disjoint(w, standby, slot)
	healed := time.Now()
	p.Release()
	return 4, healed, fmt.Sprintf("slot %s passed to the standby %.1f s after the pause; zombie then %s; %s", slot, took.Seconds(), z.State, note)
}

// d: disconnect a worker from the ZooKeeper network while clients still
// reach it on the front network; a standby takes its slot after the session
// expires; the cut-off worker serves up to its ceiling and then refuses.
func partitionWorker(e env) (int, time.Time, string) {
	ws := e.workers()
	w := ws[0]
	slot := e.status(w).Slot
	p, standby := e.standbyFor(3)
	net := e.st.Network("zk")
	e.docker("network", "disconnect", net, w.ID)
	took := e.waitFor(sessionTimeout+standbyHorizon+15*time.Second, "the standby takes the cut-off worker's slot", func() bool {
		s, _ := getStatus(e.ctx, standby)
		return s.State == coordinator.StateServing && s.Slot == slot
	})
	e.sleep(time.Second)
	cut := e.status(w)
	if cut.State == coordinator.StateServing && cut.Ready {
		e.t.Errorf("the cut-off worker still serves %s while its successor does", slot)
	}
	note := e.disjoint(w, standby, slot)
	e.docker("network", "connect", net, w.ID)
	healed := time.Now()
	p.Release()
	return 4, healed, fmt.Sprintf("slot %s passed on %.1f s after the cut; cut-off worker then %s; %s", slot, took.Seconds(), cut.State, note)
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
// must cost clients nothing.
func killZKLeader(e env) (int, time.Time, string) {
	before := e.col.n.snap()
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
	after := e.col.n.snap()
	healed := time.Now()
	e.docker("start", leader.ID)
	e.must(e.st.WaitZK(e.ctx, 60*time.Second), "quorum after the restart")
	if election < horizon-renew && after.clientErrs > before.clientErrs {
		e.t.Errorf("the election took %v (< horizon %v) yet the Go client saw %d errors", election, horizon, after.clientErrs-before.clientErrs)
	}
	return 3, healed, fmt.Sprintf("killed %s (leader); new leader in %.1f s; errors during it: %d client, %d direct",
		leader.Service, election.Seconds(), after.clientErrs-before.clientErrs, after.redisErrs-before.redisErrs)
}

// f: stop two of three ZooKeeper nodes for 8 s: within the horizon, so
// every worker serves on its confirmed ceiling and no client sees an error.
func loseQuorum(e env) (int, time.Time, string) {
	before := e.col.n.snap()
	leader, others := e.zkModes()
	stopped := []Container{leader, others[0]}
	for _, z := range stopped {
		e.docker("kill", "-s", "KILL", z.ID)
	}
	e.sleep(8 * time.Second)
	healed := time.Now()
	for _, z := range stopped {
		e.docker("start", z.ID)
	}
	e.must(e.st.WaitZK(e.ctx, 60*time.Second), "quorum after the restart")
	e.noErrorsSince(before, "2 of 3 ZooKeeper nodes down")
	return 3, healed, fmt.Sprintf("%s and %s down for %v; quorum back %.1f s after the restart",
		stopped[0].Service, stopped[1].Service, 8*time.Second, time.Since(healed).Seconds())
}

// g1: kill -9 a worker, set its clock 5 s behind, start it: the only free
// slot is its former one, whose reservation is ahead of that clock. It must
// not issue a timestamp at or below the reservation.
func clockBehindRestart(e env) (int, time.Time, string) {
	ws := e.workers()
	w := ws[0]
	slot := e.status(w).Slot
	p, err := HoldFreeSlots(e.ctx, e.st)
	e.must(err, "hold the free slots")
	e.t.Cleanup(p.Release)
	e.docker("kill", "-s", "KILL", w.ID)
	beforeKill := e.col.ContainerIDs(w.ID) // dead now: no more IDs come from it
	_, oldHi, _ := slotRange(beforeKill, slot)
	reserved := e.reservation(slot)
	e.must(e.st.CopyTo(e.ctx, w, "/chaos-clock", "-5s\n"), "set the clock back")
	e.docker("start", w.ID)
	var s workerStatus
	e.waitFor(sessionTimeout+horizon+15*time.Second, "the restarted worker claims its former slot", func() bool {
		s = e.status(w)
		return s.Slot == slot && s.LeaseNode != ""
	})
	e.waitFor(15*time.Second, "the restarted worker serves", func() bool {
		s = e.status(w)
		return s.State == coordinator.StateServing
	})
	e.sleep(2 * time.Second)
	s = e.status(w)
	all := e.col.ContainerIDs(w.ID)
	newLo, _, newN := slotRange(all[len(beforeKill):], slot)
	if newN == 0 {
		e.t.Errorf("the restarted worker served no ID on %s", slot)
	} else if newLo <= reserved {
		e.t.Errorf("the restarted worker served ms %d on %s, not above the reservation %d it found", newLo, slot, reserved)
	}
	healed := time.Now()
	e.must(e.st.CopyTo(e.ctx, w, "/chaos-clock", "0s\n"), "put the clock right")
	p.Release()
	return 3, healed, fmt.Sprintf("%s back on %s with its clock −5 s: floor %d = reservation %d ≥ last ms before the kill %d; first ms after %d (%d IDs)",
		w.Short(), slot, s.FloorMs, reserved, oldHi, newLo, newN)
}

// reservation reads reserved_until_ms of a slot.
func (e env) reservation(slot string) int64 {
	e.t.Helper()
	conn, err := e.st.DialZK(e.ctx)
	e.must(err, "dial ZooKeeper")
	defer conn.Close()
	sm, err := coordinator.ReadSlotMap(conn, zkRoot)
	e.must(err, "read the slot map")
	s, err := snowflake.ParseSlot(slot)
	e.must(err, "parse slot")
	return sm.Slots[s].ReservedUntilMs
}

// g2: step a serving worker's clock back 2 s: it refuses (-CLOCKBACK or
// -NOLEASE) rather than repeat a timestamp; clients move to the others.
func clockStepBack(e env) (int, time.Time, string) {
	ws := e.workers()
	w := ws[0]
	e.must(e.st.CopyTo(e.ctx, w, "/chaos-clock", "-2s\n"), "step the clock back")
	e.sleep(time.Second)
	s := e.status(w)
	e.sleep(2 * time.Second)
	healed := time.Now()
	e.must(e.st.CopyTo(e.ctx, w, "/chaos-clock", "0s\n"), "put the clock right")
	return 3, healed, fmt.Sprintf("%s stepped back 2 s: %s, ready=%v", w.Short(), s.State, s.Ready)
}

// h: restart every worker in turn with SIGTERM (docker stop), waiting for
// each to serve again before the next.
func rollingRestart(e env) (int, time.Time, string) {
	ws := e.workers()
	var worst time.Duration
	var healed time.Time
	for _, w := range ws {
		e.docker("stop", "-t", "10", w.ID)
		healed = time.Now()
		e.docker("start", w.ID)
		d, err := WaitServing(e.ctx, e.st, 3, recoveryBound+30*time.Second)
		e.must(err, "after restarting "+w.Short())
		worst = max(worst, d)
	}
	return 3, healed, fmt.Sprintf("3 workers restarted in turn; slowest back in %.1f s", worst.Seconds())
}
