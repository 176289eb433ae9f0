package coordinator

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// claimer is one Run's claim state on its ZooKeeper session: it claims a
// slot (claim.go), holds it (hold.go), stands by (standby.go) and releases
// it (release.go).
type claimer struct {
	c *Coordinator
	*zkSession
	// avoid holds the slots found unusable (avoid.go), until when and why.
	avoid map[snowflake.Slot]avoided
	// watch is the armed one-shot watch on leases/, if any.
	watch <-chan zk.Event
	// owned are the datacenters the root owns, read (and checked against
	// the ensemble's other fleets) by ensureRoot; claims stay inside them.
	owned tree.DCSet
	// rollback notices the tree rolled back under us (rollback.go), from
	// every listing of leases/ (list).
	rollback rollbackWatch
	// backWhileHeld is the evidence of a restore seen while holding a
	// lease the restore kept (heldSlotWentBack), and backSince what we
	// knew before it: the next claim waits for a recover run after it.
	backWhileHeld string
	backSince     int64
	// standby is this worker standing by (standby.go); standbys is what
	// it sees of the others' standby nodes while it holds (standbyview.go).
	standby  *standby
	standbys *standbyView
	// shortened: the last renew used StandbyHorizon (for the log).
	shortened bool
	// serverErrs counts the renews in a row the server answered with an
	// error (writeServerError), for the log.
	serverErrs int
	// waiting is the situation the claim loop last logged as why it takes
	// no slot (sayWhyWaiting), "" once it claims; far counts the slots
	// found reserved too far past our clock since then (farFound).
	waiting string
	far     int
	// reach is the root's bound (max horizon + max skew), written into
	// every slot record so that it survives the root; a reservation
	// further past ZooKeeper's time is one no holder wrote (beyond).
	reach time.Duration
	// resume is the lease we lost with our session, if any, whose slot a
	// claim resumes while nobody has written it since (resume.go).
	resume *lostLease
}

// deleteLease deletes a lease node of ours (lost race, given up slot).
func (s *claimer) deleteLease(ctx context.Context, l *wonLease) {
	s.deleteProtected(ctx, l.path, l.guid)
}

// sleep is the claim and hold loops' pause: it waits d of real time or
// until ctx ends; false means ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// newClaimer is the claim state of a Run on session zs.
func newClaimer(c *Coordinator, zs *zkSession) *claimer {
	own := &standby{c: c, z: zs}
	return &claimer{c: c, zkSession: zs, standby: own, standbys: &standbyView{c: c, z: zs, own: own}}
}
