package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// leaseState is where a session's lease loop is. Each state is a method
// that runs until the loop leaves it and returns the state it goes to
// (run); what one state hands the next is in the leaseLoop's fields.
type leaseState int

const (
	// checkingRoot reads and checks the root, waiting for init (root.go):
	// the first state of a session, and the one damage leads back to.
	checkingRoot leaseState = iota
	// waitingRecover claims nothing until snowflakectl recover ran, the
	// ensemble having gone back in time (rollback.go).
	waitingRecover
	// claiming lists leases/, creates our node, keeps it if it is the
	// slot's lowest and makes the first fenced reservation (claim.go,
	// reserve.go).
	claiming
	// standingBy waits for a change of leases/ while no slot we may take
	// is free (standby.go).
	standingBy
	// serving issues IDs and renews the reservation until the lease is
	// lost, or released when ctx ends (hold.go, release.go).
	serving
	// sessionRefused: the ensemble refuses our session's reconnect
	// (refusal.go): Run opens another session.
	sessionRefused
	// done: ctx ended, or a fault retrying cannot fix (stop).
	done
)

// leaseLoop is one Run's lease loop on one ZooKeeper session: its states
// (run) and what they keep across each other.
type leaseLoop struct {
	c *Coordinator
	*zkSession
	// avoid holds the slots found unusable (avoid.go), until when and why.
	avoid map[snowflake.Slot]avoided
	// watch is the armed one-shot watch on leases/, if any.
	watch <-chan zk.Event
	// owned are the datacenters the root owns, read (and checked against
	// the ensemble's other fleets) by checkRoot; claims stay inside them.
	owned tree.DCSet
	// rollback notices the tree rolled back under us (rollback.go), from
	// every listing of leases/ (list).
	rollback rollbackWatch
	// inherited is the rollback history of the session the ensemble
	// refused, if this one follows it: a session on the same root waits
	// for recover before it claims.
	inherited *rollbackWatch
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
	// waiting is the situation claiming last logged as why it takes
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

	// What one state hands the next. claimStart is when the claim under
	// way began (zero: none), across standing by and waiting for recover;
	// won is the lease claiming hands serving; recover is what
	// waitingRecover waits for; err is why the loop is done (stop).
	claimStart time.Time
	won        *wonLease
	recover    recoverWait
	err        error
}

// newLeaseLoop is a Run's lease loop on session zs; prev is the rollback
// history of the session before it, if the ensemble refused that one.
func newLeaseLoop(c *Coordinator, zs *zkSession, prev *rollbackWatch) *leaseLoop {
	own := &standby{c: c, z: zs}
	return &leaseLoop{c: c, zkSession: zs, inherited: prev, standby: own, standbys: &standbyView{c: c, z: zs, own: own}}
}

// run drives the lease loop from checkingRoot until ctx ends (nil, the
// lease released), a fault retrying cannot fix (an error), or the
// ensemble refuses the session (errRefusedSession).
func (s *leaseLoop) run(ctx context.Context) error {
	state := checkingRoot
	for {
		switch state {
		case checkingRoot:
			state = s.runCheckingRoot(ctx)
		case waitingRecover:
			state = s.runWaitingRecover(ctx)
		case claiming:
			state = s.runClaiming(ctx)
		case standingBy:
			state = s.runStandingBy(ctx)
		case serving:
			state = s.runServing(ctx)
		case sessionRefused:
			return errRefusedSession
		case done:
			if ctx.Err() != nil {
				return nil // the lease released, or none held
			}
			return fmt.Errorf("coordinator: %w", s.err)
		}
	}
}

// stop ends the loop for err (done): a fault retrying cannot fix, unless
// ctx ended meanwhile, when err is ctx's or what its end caused.
func (s *leaseLoop) stop(err error) leaseState {
	s.err = err
	return done
}

// damaged reports a tree found missing a node (err wraps ErrDamaged) and
// goes back to checkingRoot: the root may have been made again, with
// other ranges or bounds.
func (s *leaseLoop) damaged(err error) leaseState {
	s.c.treeMissing(err)
	return checkingRoot
}

// deleteLease deletes a lease node of ours (lost race, given up slot).
func (s *leaseLoop) deleteLease(ctx context.Context, l *wonLease) {
	s.deleteProtected(ctx, l.path, l.guid)
}

// sleep is the states' pause: it waits d of real time or until ctx ends;
// false means ctx ended.
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
