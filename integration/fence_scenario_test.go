//go:build integration

package integration

import (
	"fmt"
	"path"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// o: delete a serving holder's lease node under it while its session lives
// (an operator's slip, or a deletion its client has not seen yet). Its next
// renew is fenced by that node, so it must fail: the holder stops serving
// the lease within a few renew intervals and claims again. A holder whose
// renew writes the slot without the fence would go on serving a lease
// ZooKeeper no longer lists.
func leaseNodeDeleted(e env) result {
	w := e.workers()[0]
	s := e.status(w)
	conn, err := e.st.DialZKAs(e.ctx, e.st.ids.Operator)
	e.must(err, "dial ZooKeeper as the operator")
	defer conn.Close()
	fault := time.Now()
	e.must(conn.Delete(path.Join(zklayout.LeasesPath(zkRoot), s.LeaseNode), -1), "delete the lease node "+s.LeaseNode)
	// Session timeout as the limit: generous for a few renews under load.
	took := e.waitFor(sessionTimeout, w.Short()+" drops the deleted lease", func() bool {
		now, err := getStatus(e.ctx, w)
		return err == nil && now.LeaseNode != s.LeaseNode
	})
	return result{want: 3, fault: fault, note: fmt.Sprintf("deleted %s's lease node %s (%s): dropped %.1f s later", w.Short(), s.LeaseNode, s.Slot, took.Seconds())}
}

// checkReleased asserts that a worker stopped by SIGTERM lowered its slot's
// stored reservation below the ceiling it had confirmed before the stop
// (before: its /status then), so that a successor need not wait out the
// horizon. Read before the worker starts again and may claim the slot anew.
func (e env) checkReleased(w Container, before workerStatus) {
	e.t.Helper()
	if before.Slot == "" {
		return
	}
	rec := e.slotRecord(before.Slot)
	if rec.Holder == before.LeaseNode && rec.ReservedUntilMs >= before.CeilingMs {
		e.t.Errorf("%s stopped by SIGTERM left %s reserved until %d, at or above its ceiling %d before the stop: the release did not lower the reservation",
			w.Short(), before.Slot, rec.ReservedUntilMs, before.CeilingMs)
	}
}
