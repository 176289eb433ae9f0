package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// zkSession is one ZooKeeper session of a Run: dialled with its events
// waking the lease loop (onEvent), with the worker's credentials, its calls
// bounded by the call timeout and ctx (call), the protected create of a
// lease node (createProtected, confirmOwned) and the guaranteed delete of
// our nodes (deleteProtected). The lease loop on it is a leaseLoop.
type zkSession struct {
	conn *zk.Conn
	// timeout bounds a call given none (the config's call timeout).
	timeout time.Duration
	// orphans are guids of our protected creates whose outcome was unknown:
	// such a node may exist, now or once a queued create is sent on a later
	// session, and block its slot; any we see is deleted.
	orphans map[string]struct{}
}

// dialSession opens a Run's session, without credentials yet (auth).
func (c *Coordinator) dialSession() (*zkSession, error) {
	conn, err := zkconn.Connect(c.cfg.Servers, c.cfg.TLS, c.cfg.SessionTimeout, c.log, c.onEvent)
	if err != nil {
		return nil, err
	}
	return &zkSession{conn: conn, timeout: c.cfg.callTimeout()}, nil
}

// auth adds the digest credentials auth, retried until ZooKeeper answers
// (a worker may start before it) or ctx ends.
func (z *zkSession) auth(ctx context.Context, auth string) error {
	return zkconn.AddAuth(ctx, z.conn, auth)
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

// call runs fn, a call on the session, bounded by d (0: the call timeout)
// and ctx. On timeout or cancel it returns without waiting; fn's results
// must then not be read.
func (z *zkSession) call(ctx context.Context, d time.Duration, fn func() error) error {
	if err := ctx.Err(); err != nil {
		// Nothing is sent once ctx has ended (SIGTERM): a renew launched
		// now would race the release's write. Callers treat it like an
		// abandoned call.
		return fmt.Errorf("%w: not sent: %w", ErrCallTimeout, err)
	}
	if d <= 0 {
		d = z.timeout
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

// createProtected sends the create of a protected ephemeral sequential
// node: prefix carries guid, by which a node whose answer was lost is
// known (an orphan, deleted when a listing shows it, cleanOrphans).
func (z *zkSession) createProtected(ctx context.Context, prefix, guid string, data []byte, acl []zk.ACL) (string, error) {
	var created string
	err := z.call(ctx, 0, func() (err error) {
		created, err = z.conn.Create(prefix, data, zk.FlagEphemeral|zk.FlagSequence, acl)
		return err
	})
	if err != nil {
		// created is not read: an abandoned call may still write it.
		if unknownOutcome(err) {
			z.addOrphan(guid)
		}
		return "", err
	}
	return created, nil
}

// confirmOwned confirms the protected create of lease node created: that
// our current session owns it (a create go-zookeeper resent on a later
// session belongs to that one, and is deleted). It returns the node's Stat.
func (z *zkSession) confirmOwned(ctx context.Context, created, guid string) (*zk.Stat, error) {
	var (
		ok bool
		st *zk.Stat
	)
	err := z.call(ctx, 0, func() (err error) { ok, st, err = z.conn.Exists(created); return })
	if err != nil {
		z.addOrphan(guid)
		return nil, fmt.Errorf("check lease node %s: %w", created, err)
	}
	if !ok {
		return nil, fmt.Errorf("lease node %s vanished: its session ended", created)
	}
	if cur := z.conn.SessionID(); st.EphemeralOwner != cur {
		z.deletePath(ctx, created)
		return nil, fmt.Errorf("lease node %s belongs to session %x, not our session %x", created, st.EphemeralOwner, cur)
	}
	return st, nil
}

// deleteProtected deletes a protected node of ours (a lost race, a given up
// slot); one it cannot is an orphan, deleted when a listing shows it.
func (z *zkSession) deleteProtected(ctx context.Context, p, guid string) {
	if !z.deletePath(ctx, p) {
		z.addOrphan(guid)
	}
}

func (z *zkSession) addOrphan(guid string) {
	if z.orphans == nil {
		z.orphans = map[string]struct{}{}
	}
	z.orphans[guid] = struct{}{}
}

// deletePath deletes a node; true if it is gone.
func (z *zkSession) deletePath(ctx context.Context, p string) bool {
	err := z.call(ctx, 0, func() error { return z.conn.Delete(p, -1) })
	return err == nil || errors.Is(err, zk.ErrNoNode)
}
