package coordinator

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
)

// errRefusedSession: the ensemble keeps refusing our session's reconnect
// while it grants a new session at once. ZooKeeper refuses a client that has
// seen a later zxid than its own: the ensemble went back in time (restored
// from a backup, or rebuilt empty), and go-zookeeper would retry forever.
var errRefusedSession = errors.New("zookeeper refuses our session's reconnect but grants a new session: the ensemble went back in time")

// watchRefusal probes the ensemble with a fresh connection (which has seen
// no zxid) whenever conn has had no session for a session timeout; when the
// probe gets one, conn is refused for the zxid it has seen, and watchRefusal
// marks the coordinator refused and wakes its loops. It returns when ctx
// ends or after marking.
func (c *Coordinator) watchRefusal(ctx context.Context, conn *zk.Conn) {
	tick := time.NewTicker(c.cfg.SessionTimeout / 4)
	defer tick.Stop()
	var since time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if conn.State() == zk.StateHasSession {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
			continue
		}
		if time.Since(since) < c.cfg.SessionTimeout {
			continue
		}
		if c.probeSession(ctx) {
			c.refused.Store(true)
			c.log.Error("zookeeper refuses our session but grants a new one: the ensemble went back in time (restored from a backup, or rebuilt empty); opening a new session, and claiming only after snowflakectl recover (or init)",
				"error", errRefusedSession)
			select {
			case c.wake <- struct{}{}:
			default:
			}
			return
		}
		since = time.Now() // the ensemble is away for everyone: look again later
	}
}

// probeSession reports whether a new connection to the servers gets a
// session within the call timeout.
func (c *Coordinator) probeSession(ctx context.Context) bool {
	probe, err := dial(c.cfg.Servers, c.cfg.TLS, c.cfg.SessionTimeout, nil, func(zk.Event) {})
	if err != nil {
		return false
	}
	defer closeBy(probe, time.Now().Add(closeTimeout))
	deadline := time.Now().Add(c.cfg.callTimeout())
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if probe.State() == zk.StateHasSession {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}
