package coordinator

import "time"

// outage is a holder's time out of touch with ZooKeeper: a session
// without a connection, or a renew without an answer. It serves on up to
// the ceiling it confirmed last, so the log says so once when the outage
// starts, with that ceiling, and once when a renew is confirmed again:
// before, nothing was logged while ZooKeeper was unreachable.
type outage struct {
	since time.Time // zero while in touch
}

// gone marks the holder of l out of touch (why: the session's state, or
// the renew's), logging the start of an outage once.
func (o *outage) gone(c *Coordinator, l *wonLease, why string) {
	c.setState(StateDisconnected)
	if !o.since.IsZero() {
		return
	}
	o.since = time.Now()
	ceiling := time.UnixMilli(l.ceiling).UTC()
	c.log.Warn("zookeeper unreachable; serving up to the confirmed ceiling, then refusing until a renew is confirmed",
		"slot", l.slot, "why", why, "ceiling", ceiling, "serving_for", time.Duration(l.ceiling-c.nowMs())*time.Millisecond)
}

// back marks the holder of l in touch again after a confirmed renew.
func (o *outage) back(c *Coordinator, l *wonLease) {
	c.setState(StateServing)
	if o.since.IsZero() {
		return
	}
	c.log.Info("zookeeper reachable again; renew confirmed", "slot", l.slot,
		"out_for", time.Since(o.since).Round(time.Millisecond), "ceiling", time.UnixMilli(l.ceiling).UTC())
	o.since = time.Time{}
}
