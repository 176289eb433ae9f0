package coordinator

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// errRefusedSession: the ensemble keeps refusing our session's reconnect
// while it Grants a new session at once. ZooKeeper refuses a client that has
// seen a later zxid than its own: the ensemble went back in time (restored
// from a backup, or rebuilt empty), and go-zookeeper would retry forever.
var errRefusedSession = errors.New("zookeeper refuses our session's reconnect but Grants a new session: the ensemble went back in time")

// watchRefusal probes the ensemble with a fresh connection (which has seen
// no zxid) whenever conn has had no session for a session timeout; when
// probes get one while conn does not, conn is refused for the zxid it has
// seen, and watchRefusal marks the coordinator refused and wakes its lease loop.
// It returns when ctx ends or after marking.
func (c *Coordinator) watchRefusal(ctx context.Context, conn *zk.Conn) {
	tick := time.NewTicker(c.cfg.SessionTimeout / 4)
	defer tick.Stop()
	// since: when conn was first seen without a session; granted: when a
	// probe first got one meanwhile. A reconnect after a partition, an
	// expiry or a restart completes within seconds of the ensemble
	// answering; a refusal for our zxid lasts for ever. So the verdict
	// needs a probe granted, then conn still without a session two session
	// timeouts later, and a second probe granted.
	var since, granted time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if conn.State() == zk.StateHasSession {
			since, granted = time.Time{}, time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
			continue
		}
		if time.Since(since) < c.cfg.SessionTimeout {
			continue
		}
		if !granted.IsZero() && time.Since(granted) < 2*c.cfg.SessionTimeout {
			continue
		}
		if !c.probeSession(ctx) {
			granted = time.Time{} // the ensemble is away for everyone: look again later
			continue
		}
		if granted.IsZero() {
			granted = time.Now()
			continue
		}
		c.refused.Store(true)
		c.log.Error("zookeeper refuses our session but Grants a new one: the ensemble went back in time (restored from a backup, or rebuilt empty); opening a new session, and claiming only after snowflakectl recover (or init)",
			"error", errRefusedSession, "without_session", time.Since(since).Round(time.Second))
		select {
		case c.wake <- struct{}{}:
		default:
		}
		return
	}
}

// probeSession reports whether a new connection to the servers gets a
// session within the call timeout.
func (c *Coordinator) probeSession(ctx context.Context) bool {
	probe, err := zkconn.Connect(c.cfg.Servers, c.cfg.TLS, c.cfg.SessionTimeout, nil, func(zk.Event) {})
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
