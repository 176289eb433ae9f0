package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/snowflake"
)

// session is one Run's connection and claim state.
type session struct {
	c    *Coordinator
	conn *zk.Conn
	// orphans are guids of our protected creates whose outcome was unknown:
	// such a node may exist, now or once a queued create is sent on a later
	// session, and block its slot; any we see is deleted.
	orphans map[string]struct{}
	// avoid holds slots released for a too-long reservation wait, or
	// refused, until when.
	avoid map[snowflake.Slot]time.Time
	// refused are the avoided slots whose node refused our access, and why.
	refused map[snowflake.Slot]error
	// watch is the armed one-shot watch on leases/, if any.
	watch <-chan zk.Event
	// relist is the standby's current periodic re-list interval, backed off
	// while nothing is free; lostRaces counts claims lost to a lower node
	// since the last won, widening the standby's jitter window.
	relist    time.Duration
	lostRaces int
	relisted  bool // the standby listed again after a slow listing
	// owned are the datacenters the root owns, read (and checked against
	// the ensemble's other fleets) by ensureRoot; claims stay inside them.
	owned DCSet
	// rollback notices the tree rolled back under us (rollback.go).
	rollback rollbackWatch
	// standbyNode is our standby node while we stand by (standby.go),
	// made by the create of standbyGUID and owned by standbySession;
	// standbyRetryAt delays a retry after a failure.
	standbyNode    string
	standbyGUID    string
	standbySession int64
	standbyRetryAt time.Time
	// standbyGUIDs are the GUIDs of our standby creates whose node may
	// exist (not known deleted); standbySessions the sessions named in
	// them. A node in standby/ with either is ours (ownStandby).
	standbyGUIDs    map[string]struct{}
	standbySessions map[int64]struct{}
	// standbyNames is the last listing of standby/ while holding, less
	// our own nodes; standbyOrphans are those (deleted on the orphan tick).
	// standbyList is the answer of the listing still out, if any.
	standbyNames   []string
	standbyOrphans []string
	standbyList    chan standbyListing
	// shortened: the last renew used StandbyHorizon (for the log).
	shortened bool
	// serverErrs counts the renews in a row the server answered with an
	// error (writeServerError), for the log.
	serverErrs int
}

// onEvent runs on go-zookeeper's goroutines: it must not block nor call the
// connection.
func (c *Coordinator) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	c.zkState.Store(int32(ev.State))
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// call runs fn with the coordinator's call timeout and ctx. On timeout or
// cancel it returns without waiting; fn's results must then not be read.
func (c *Coordinator) call(ctx context.Context, d time.Duration, fn func() error) error {
	if err := ctx.Err(); err != nil {
		// Nothing is sent once ctx has ended (SIGTERM): a renew launched
		// now would race the release's write. Callers treat it like an
		// abandoned call.
		return fmt.Errorf("%w: not sent: %w", ErrCallTimeout, err)
	}
	if d <= 0 {
		d = c.cfg.callTimeout()
	}
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	answered, err := zkconn.Call(tctx, fn)
	switch {
	case answered:
		return err
	case ctx.Err() != nil:
		// Abandoned like a timeout: the outcome is unknown, and fn may
		// still write its results.
		return fmt.Errorf("%w: %w", ErrCallTimeout, ctx.Err())
	}
	return fmt.Errorf("%w after %v", ErrCallTimeout, d)
}

// stopAt is when Run's ctx ended, the start of the shutdown that
// ReleaseTimeout plus closeTimeout bound (set by whoever sees it first).
func (c *Coordinator) stopAt() time.Time {
	c.stopped.CompareAndSwap(0, time.Now().UnixNano())
	return time.Unix(0, c.stopped.Load())
}

// closeTimeout is the part of the shutdown left for closing the session
// after the release.
const closeTimeout = time.Second

// closeBy closes the session, giving up waiting at deadline: go-zookeeper's
// Close can wait seconds to queue the close and for its answer. The session
// then ends by itself (expiry), its nodes with it.
func closeBy(conn *zk.Conn, deadline time.Time) {
	done := make(chan struct{})
	go func() {
		conn.Close()
		close(done)
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// unknownOutcome reports errors after which a write may or may not have
// landed.
func unknownOutcome(err error) bool {
	return errors.Is(err, ErrCallTimeout) || errors.Is(err, zk.ErrConnectionClosed) ||
		errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrSessionExpired) ||
		errors.Is(err, zk.ErrClosing) || errors.Is(err, zk.ErrSessionMoved)
}

// sleep waits d of real time or until ctx ends; false means ctx ended.
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

// deleteLease deletes a lease node of ours (lost race, given up slot).
func (s *session) deleteLease(ctx context.Context, l *lease) {
	if !s.deletePath(ctx, l.path) {
		s.addOrphan(l.guid)
	}
}

func (s *session) addOrphan(guid string) {
	if s.orphans == nil {
		s.orphans = map[string]struct{}{}
	}
	s.orphans[guid] = struct{}{}
}

// deletePath deletes a node; true if it is gone.
func (s *session) deletePath(ctx context.Context, p string) bool {
	err := s.c.call(ctx, 0, func() error { return s.conn.Delete(p, -1) })
	return err == nil || errors.Is(err, zk.ErrNoNode)
}

// SplitAddrs splits a comma-separated host:port list, as --zk takes it,
// dropping blanks.
func SplitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
