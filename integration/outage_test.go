//go:build integration

package integration

import (
	"fmt"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
)

// zkOutageFor is how long scenario i keeps every ZooKeeper node down:
// within the default horizon (40 s) with the ensemble's restart and the
// reconnect on top.
const zkOutageFor = 25 * time.Second

// outageScenario is scenario i, hooked into scenarios().
var outageScenario = scenario{"i stop all 3 ZooKeeper nodes", 3, zkOutage}

// i: kill every ZooKeeper node for 25 s, then start them. The workers serve
// on their confirmed ceilings throughout: no client error, direct or Go
// client; afterwards their sessions are back (ZooKeeper restores them from
// its log and gives each a fresh timeout), or a worker whose session did
// expire has claimed again without an error a client saw.
func zkOutage(e env) (int, time.Time, string) {
	before := e.col.n.snap()
	leases := map[string]string{} // a lease node outlives only its session
	for _, w := range e.workers() {
		leases[w.ID] = e.status(w).LeaseNode
	}
	zks, err := e.st.ZooKeepers(e.ctx)
	e.must(err, "list ZooKeeper")
	for _, z := range zks {
		e.docker("kill", "-s", "KILL", z.ID)
	}
	e.sleep(zkOutageFor)
	healed := time.Now()
	for _, z := range zks {
		e.docker("start", z.ID)
	}
	e.must(e.st.WaitZK(e.ctx, 60*time.Second), "quorum after the restart")
	quorum := time.Since(healed)
	// Every worker renews again: serving, and its ceiling a horizon ahead
	// of a clock that moved on by the outage.
	var back, reclaimed int
	e.waitFor(15*time.Second, "every worker renewing after the outage", func() bool {
		back, reclaimed = 0, 0
		for _, w := range e.workers() {
			s := e.status(w)
			if s.State != coordinator.StateServing || !s.Ready ||
				s.CeilingMs < time.Now().UnixMilli()+int64(horizon/time.Millisecond)/2 {
				return false
			}
			if s.LeaseNode == leases[w.ID] {
				back++
			} else {
				reclaimed++
			}
		}
		return back+reclaimed == len(leases)
	})
	e.noErrorsSince(before, "every ZooKeeper node down")
	after := e.col.n.snap()
	return 3, healed, fmt.Sprintf("zk1..zk3 down for %v; quorum back %.1f s after the restart; sessions (lease nodes) back %d, re-claimed %d; errors during it: %d client, %d direct",
		zkOutageFor, quorum.Seconds(), back, reclaimed, after.clientErrs-before.clientErrs, after.redisErrs-before.redisErrs)
}

// noErrorsSince fails the scenario if a client saw an error since before:
// an outage within the horizon must cost nothing.
func (e env) noErrorsSince(before snapshot, what string) {
	e.t.Helper()
	after := e.col.n.snap()
	if c, d := after.clientErrs-before.clientErrs, after.redisErrs-before.redisErrs; c != 0 || d != 0 {
		e.t.Errorf("%s for less than the horizon %v: %d Go client errors and %d direct errors, want 0", what, horizon, c, d)
	}
}

// shortened waits until the n holders have shortened their reservations
// to the standby horizon (a standby now waits for their datacenter), so
// that a holder killed next passes its slot on within the session timeout
// plus the standby horizon.
func (e env) shortened(n int) {
	e.t.Helper()
	e.waitFor(10*time.Second, "the holders shortening to the standby horizon", func() bool {
		ws := e.workers()
		if len(ws) < n {
			return false
		}
		for _, w := range ws[:n] {
			s := e.status(w)
			if s.CeilingMs == 0 || s.CeilingMs > time.Now().UnixMilli()+int64((standbyHorizon+time.Second)/time.Millisecond) {
				return false
			}
		}
		return true
	})
}
