//go:build integration

package integration

import (
	"fmt"
	"strings"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// initReach is what a root made by Stack.Init without --new-fleet reserves
// past its make: the default max horizon and the suite's 10 s skew bound.
const initReach = tree.DefaultMaxHorizon + 10*time.Second

// zkCluster is the three ZooKeeper containers and their IDs.
func (e env) zkCluster() ([]Container, []string) {
	zks, err := e.st.ZooKeepers(e.ctx)
	e.must(err, "list ZooKeeper")
	ids := make([]string, len(zks))
	for i, z := range zks {
		ids[i] = z.ID
	}
	return zks, ids
}

// ctl runs snowflakectl as the operator, on the ZooKeeper network
// (Stack.Ctl).
func (e env) ctl(args ...string) string {
	e.t.Helper()
	out, err := e.st.Ctl(e.ctx, args...)
	e.must(err, "snowflakectl "+strings.Join(args, " ")+": "+out)
	return strings.TrimSpace(out)
}

// leaseNodes are the lease nodes the workers given hold now.
func (e env) leaseNodes(ws []Container) map[string]string {
	held := map[string]string{}
	for _, w := range ws {
		held[w.ID] = e.status(w).LeaseNode
	}
	return held
}

// holdersServe waits until every worker given serves again, on a lease
// other than the one it held before the fault when anew is set (a holder
// riding an outage out on its ceiling serves, but has not come back yet),
// and returns when they did and how many kept the lease of before.
func (e env) holdersServe(limit time.Duration, ws []Container, before map[string]string, anew bool) (time.Time, int) {
	e.waitFor(limit, "every worker serves again, without a restart", func() bool {
		for _, w := range ws {
			s, err := getStatus(e.ctx, w)
			if err != nil || !s.Ready || serves(e.ctx, w.Addr("7609")) != nil || anew && s.LeaseNode == before[w.ID] {
				return false
			}
		}
		return true
	})
	back := time.Now()
	kept := 0
	for _, w := range ws {
		if s, err := getStatus(e.ctx, w); err == nil && s.LeaseNode == before[w.ID] {
			kept++
		}
	}
	return back, kept
}

// p: a held slot's node is deleted and made again empty by hand (zkCli's
// natural "fix" of a missing node), then its holder is killed: no worker
// serves the slot from floor 0 (it is shown as damaged); repair gives it a
// reservation past the root's bound.
func slotNodeEmptied(e env) result {
	w := e.workers()[0]
	s := e.status(w)
	sl, err := snowflake.ParseSlot(s.Slot)
	e.must(err, "parse slot "+s.Slot)
	// As the operator, who owns the tree; the node made again keeps the
	// ACL it had (zkCli's setAcl is a step of its own: a world-writable
	// node would be refused, not mistaken for a slot).
	conn, err := e.st.DialZKAs(e.ctx, e.st.ids.Operator)
	e.must(err, "dial ZooKeeper as the operator")
	defer conn.Close()
	sp := zklayout.SlotPath(zkRoot, sl)
	acl, _, err := conn.GetACL(sp)
	e.must(err, "read the ACL of "+sp)
	fault := time.Now()
	e.must(conn.Delete(sp, -1), "delete "+sp)
	_, err = conn.Create(sp, nil, 0, acl)
	e.must(err, "create "+sp+" with no data")
	e.docker("kill", "-s", "KILL", w.ID)
	down := sessionTimeout + 4*time.Second // its lease node is gone by then
	e.sleep(down)
	e.docker("start", w.ID)
	// Recovered once the fleet serves again (the restarted worker on
	// another slot); the checks and the operator's repair come after and
	// are not part of it.
	_, err = WaitServing(e.ctx, e.st, 3, recoveryBound)
	e.must(err, "the fleet after "+w.Short()+"'s restart")
	back := time.Now()
	sm, err := tree.ReadSlotMap(conn, zkRoot)
	e.must(err, "read the slot map")
	if sm.Damaged[sl] == "" {
		e.t.Errorf("slot %s, its node emptied by hand, is not shown as damaged", sl)
	}
	for _, l := range sm.Leases {
		if l.Slot == sl {
			e.t.Errorf("%s holds slot %s, whose node holds no reservation", l.Addr, sl)
		}
	}
	e.must(conn.Delete(sp, -1), "delete the hand-made "+sp)
	out := e.ctl("repair", "--zk", "zk1:2181,zk2:2181,zk3:2181", "--zk-root", zkRoot, "--slot", sl.String(), "--yes")
	rec := e.slotRecord(s.Slot)
	if rec.ReservedUntilMs <= s.CeilingMs {
		e.t.Errorf("repair reserved %s until %d, not above its killed holder's ceiling %d", sl, rec.ReservedUntilMs, s.CeilingMs)
	}
	return result{want: 3, fault: fault, back: back, outage: down, note: fmt.Sprintf("emptied %s's slot node %s by hand and killed it: shown damaged, never served; serving again %.1f s after its restart; %s",
		w.Short(), sl, back.Sub(fault.Add(down)).Seconds(), strings.ReplaceAll(out, "\n", "; "))}
}

// q: the whole ensemble loses its data (its data and log directories
// wiped) while the workers ride the outage out on their ceilings. No worker
// makes the root again; init (not --new-fleet) does, reserving past the
// bound: every worker serves again without a restart, above anything the
// old fleet issued.
func ensembleRebuilt(e env) result {
	holders := e.workers()
	before := e.leaseNodes(holders)
	zks, ids := e.zkCluster()
	fault := time.Now()
	for _, z := range zks {
		e.docker("exec", z.ID, "rm", "-rf", "/data/version-2", "/datalog/version-2")
	}
	e.docker(append([]string{"kill", "-s", "KILL"}, ids...)...)
	e.docker(append([]string{"start"}, ids...)...)
	e.must(e.st.WaitZK(e.ctx, 90*time.Second), "quorum of the rebuilt ensemble")
	e.sleep(3 * time.Second)
	conn, err := e.st.DialZK(e.ctx)
	e.must(err, "dial ZooKeeper")
	defer conn.Close()
	if ok, _, err := conn.Exists(zkRoot); err != nil || ok {
		e.t.Errorf("the root of the rebuilt ensemble: exists %v (%v); workers must never make it", ok, err)
	}
	e.must(e.st.Init(e.ctx, false), "snowflakectl init on the rebuilt ensemble")
	initAt := time.Now()
	// Every worker serves again under the new root, on a new lease.
	back, _ := e.holdersServe(initReach+recoveryBound+30*time.Second, holders, before, true)
	return result{want: 3, fault: fault, back: back, outage: initAt.Sub(fault) + initReach,
		note: fmt.Sprintf("wiped the ensemble's data; init %.1f s after the fault; every worker serving again on a new lease %.1f s after init (the bound: %v)",
			initAt.Sub(fault).Seconds(), back.Sub(initAt).Seconds(), initReach)}
}

// r: ZooKeeper is restored from a copy of its data taken a minute earlier
// while the workers serve. The workers see the ensemble went back in time
// and claim nothing; recover raises every slot past what the fleet could
// have issued since, and every worker serves again without a restart.
func ensembleRestored(e env) result {
	holders := e.workers()
	before := e.leaseNodes(holders)
	zks, ids := e.zkCluster()
	e.zkBackup(zks)
	e.sleep(time.Minute)
	fault := time.Now()
	e.zkRestore(zks, ids, false)
	e.sleep(sessionTimeout + 4*time.Second) // time to see the rollback
	out := e.ctl("recover", "--zk", "zk1:2181,zk2:2181,zk3:2181", "--zk-root", zkRoot, "--yes")
	recoverAt := time.Now()
	// A holder whose session survived the restore (a new epoch accepts it)
	// may keep its lease: its restored record names it.
	back, kept := e.holdersServe(initReach+recoveryBound+30*time.Second, holders, before, false)
	return result{want: 3, fault: fault, back: back, outage: recoverAt.Sub(fault) + initReach,
		note: fmt.Sprintf("restored the ensemble from a copy a minute old; recover %.1f s after the fault; every worker serving %.1f s after recover, %d of %d on the lease of before; %s",
			recoverAt.Sub(fault).Seconds(), back.Sub(recoverAt).Seconds(), kept, len(holders), strings.ReplaceAll(out, "\n", "; "))}
}
