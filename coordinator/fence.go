package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// reservedUntil is the reservation rule: a holder reserves Horizon past its
// clock, never below floor (the stored reservation found at claim, or the
// ceiling already confirmed), so a clock that stepped back never lowers it.
// While the clock is skewed beyond MaxSkew it does not drive the
// reservation: never past ZooKeeper's time of our last write (its mtime, or
// our lease node's ctime at claim) plus Horizon, so a clock running ahead
// cannot make a successor wait out its skew.
func (c *Coordinator) reservedUntil(now, floor int64) int64 {
	return c.reservedUntilH(now, floor, c.cfg.Horizon)
}

// reservedUntilH is reservedUntil with horizon: Horizon, or StandbyHorizon
// while a standby waits (renew).
func (c *Coordinator) reservedUntilH(now, floor int64, horizon time.Duration) int64 {
	h := horizon.Milliseconds()
	until := now + h
	if abs(c.skewMs.Load()) > c.cfg.MaxSkew.Milliseconds() {
		if zkMs := c.mtimeMs.Load(); zkMs > 0 {
			until = min(until, zkMs+h)
		}
	}
	// Never past the last millisecond an ID can carry: the generator takes
	// no ceiling beyond it.
	return min(max(until, floor), snowflake.MaxUnixMs)
}

// readSlot reads a slot node; a missing one (damage) or one that does not
// decode is a *slotUnusable.
func (s *leaseLoop) readSlot(ctx context.Context, l *wonLease) (tree.SlotRecord, error) {
	var (
		data []byte
		st   *zk.Stat
	)
	sp := zklayout.SlotPath(s.c.cfg.Root, l.slot)
	err := s.call(ctx, 0, func() (err error) { data, st, err = s.conn.Get(sp); return })
	if errors.Is(err, zk.ErrNoNode) {
		return tree.SlotRecord{}, missingSlot(s.c.cfg.Root, l.slot)
	}
	if err != nil {
		return tree.SlotRecord{}, fmt.Errorf("read %s: %w", sp, err)
	}
	rec, err := tree.DecodeSlot(data)
	if err != nil {
		return tree.SlotRecord{}, undecodableSlot(l.slot, fmt.Errorf("%s: %w: %w", sp, errBadSlotNode, err))
	}
	rec.Version, rec.MtimeMs, rec.Czxid = st.Version, st.Mtime, st.Czxid
	if zkMs, beyond := s.beyond(rec.ReservedUntilMs); beyond {
		return rec, undecodableSlot(l.slot, fmt.Errorf("%s: %w: reserved until %s, more than the root's bound + 1s (%v) past zookeeper's time %s",
			sp, errBeyondBound, time.UnixMilli(rec.ReservedUntilMs).UTC().Format(time.RFC3339), s.reach+time.Second,
			time.UnixMilli(zkMs).UTC().Format(time.RFC3339)))
	}
	return rec, nil
}

// beyond reports whether R, a slot's stored reservation, is
// tree.BeyondBound of zkMs, ZooKeeper's time of our last write (or of our
// lease node's create, at claim), which came after the writer's: such a
// reservation was written by hand or forged, and waiting for it would
// freeze the slot.
func (s *leaseLoop) beyond(R int64) (zkMs int64, beyond bool) {
	zkMs = s.c.mtimeMs.Load()
	return zkMs, tree.BeyondBound(R, zkMs, s.reach)
}

// errBeyondBound: a slot node reserved further past ZooKeeper's time than
// any holder, init or recover reserves (hand-written or forged): damage,
// never waited for nor adopted as a ceiling.
var errBeyondBound = errors.New("slot reservation beyond the root's bound")

// adoptIfOurs reads l's slot where a write of ours may have landed (its
// answer was lost, or a later one met a bad version): when the slot names
// l's node, that write landed, and l takes the slot's version (ours). The
// caller takes the reservation as its own rule says.
func (s *leaseLoop) adoptIfOurs(ctx context.Context, l *wonLease) (rec tree.SlotRecord, ours bool, err error) {
	rec, err = s.readSlot(ctx, l)
	if err != nil || rec.Holder != l.name {
		return rec, false, err
	}
	if l.czxid != 0 && rec.Czxid == l.czxid && rec.Version < l.version {
		s.heldSlotWentBack(l, rec.Version)
	}
	l.version = rec.Version
	return rec, true, nil
}

// writeSlot writes rec, naming l's node as its holder, into l's slot node
// at version, fenced by l's lease node. It never makes the slot node: every
// one is made with the root, and a missing one is damage.
func (s *leaseLoop) writeSlot(ctx context.Context, l *wonLease, rec tree.SlotRecord, version int32) (*zk.Stat, writeResult, error) {
	sp := zklayout.SlotPath(s.c.cfg.Root, l.slot)
	rec.Holder, rec.BoundMs = l.name, s.reach.Milliseconds()
	rec.History = l.history.With(l.tenure(rec))
	return s.fenced(ctx, l, &zk.SetDataRequest{Path: sp, Data: tree.EncodeSlot(rec), Version: version})
}

// errBadSlotNode: a slot node holds something other than a slot record (a
// hand edit, say): its reservation is unknown, so nobody may serve the slot.
var errBadSlotNode = errors.New("slot node does not decode")

// errShortMultiReply: a Multi answered without error but without the
// results it was asked for.
var errShortMultiReply = errors.New("incomplete multi reply")

// writeResult classifies a fenced write.
type writeResult int

const (
	writeOK        writeResult = iota
	writeLeaseGone             // our lease node is gone: the lease is lost
	writeConflict              // the slot node changed (bad version)
	writeNoSlot                // the slot node is gone: damage, the slot is refused
	writeUnknown               // no answer: the write may have landed
	writeFailed                // refused: the slot node's ACL shuts us out
	// writeServerError: the server answered with another error, one about
	// neither our lease nor the slot's ACL (QUOTAEXCEEDED, THROTTLEDOP,
	// REQUESTTIMEOUT, ...). Taken as an unknown outcome: the lease is kept,
	// serving up to the confirmed ceiling, and the write tried again.
	writeServerError
)

// refusal reports whether err is ZooKeeper refusing the slot node to us
// (its ACL), the only answers that make a slot worthless to this worker.
// ErrAuthFailed is not one: ZooKeeper sends it to an authentication, not to
// a write, and it concerns the session's credentials, not this slot, so
// giving up this slot for another (or counting it towards ErrSlotsRefused)
// cannot help; it is a server error like the others here (bad credentials
// at start stop Run; see fatal).
func refusal(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrInvalidACL)
}

// fenced runs Multi(Check(our lease node), op): op applies only while our
// lease node exists, so a holder that lost its lease (or a call resent on a
// new session after expiry) can never write the slot.
func (s *leaseLoop) fenced(ctx context.Context, l *wonLease, op any) (*zk.Stat, writeResult, error) {
	var resp []zk.MultiResponse
	err := s.call(ctx, 0, func() (err error) {
		resp, err = s.conn.Multi(&zk.CheckVersionRequest{Path: l.path, Version: -1}, op)
		return err
	})
	if unknownOutcome(err) {
		// resp may be abandoned to a call still running: not to be read.
		return nil, writeUnknown, err
	}
	return classifyFenced(resp, err, op)
}

// classifyFenced reads the reply to Multi(Check(lease node), op).
func classifyFenced(resp []zk.MultiResponse, err error, op any) (*zk.Stat, writeResult, error) {
	switch {
	case err == nil:
		// The callers take the slot node's new version from the SetData's
		// Stat (a Create carries none). A reply without it is not a
		// confirmation: unknown, the outcome read again.
		if len(resp) != 2 {
			return nil, writeUnknown, fmt.Errorf("fenced write: %w: %d results, want 2", errShortMultiReply, len(resp))
		}
		if _, set := op.(*zk.SetDataRequest); set && resp[1].Stat == nil {
			return nil, writeUnknown, fmt.Errorf("fenced write: %w: no Stat for the slot node", errShortMultiReply)
		}
		return resp[1].Stat, writeOK, nil
	case unknownOutcome(err):
		return nil, writeUnknown, err
	}
	if len(resp) == 2 && errors.Is(resp[0].Error, zk.ErrNoNode) {
		return nil, writeLeaseGone, err
	}
	switch {
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
		return nil, writeConflict, err
	case errors.Is(err, zk.ErrNoNode):
		if len(resp) == 2 && errors.Is(resp[1].Error, zk.ErrNoNode) {
			return nil, writeNoSlot, err // deleted by hand, or slots/ with it
		}
		return nil, writeLeaseGone, err
	}
	if refusal(err) {
		return nil, writeFailed, err
	}
	// Any other error: go-zookeeper maps the codes it does not know
	// (QUOTAEXCEEDED -125, THROTTLEDOP -127, REQUESTTIMEOUT -122, ...) to
	// "unknown error: <code>". None says our lease or the slot is gone.
	return nil, writeServerError, fmt.Errorf("fenced write: %w: %w", errServerError, err)
}

// errServerError marks a fenced write the server answered with an error
// that is neither a conflict, a missing node nor a refusal.
var errServerError = errors.New("zookeeper answered the fenced write with an error")

// observeWrite records the renew latency and the skew of the ZooKeeper
// leader's mtime against our [send, receive] window.
func (c *Coordinator) observeWrite(st *zk.Stat, sendMs, recvMs int64, sent time.Time) {
	c.m.renew.Observe(time.Since(sent).Seconds())
	if st == nil {
		return
	}
	c.observeSkew(st.Mtime, sendMs, recvMs)
}

// observeSkew records zkMs, a time the ZooKeeper leader stamped on a write
// of ours, and the skew of it against the write's [send, receive] window.
func (c *Coordinator) observeSkew(zkMs, sendMs, recvMs int64) {
	c.mtimeMs.Store(zkMs)
	var skew int64
	switch {
	case zkMs < sendMs:
		skew = zkMs - sendMs
	case zkMs > recvMs:
		skew = zkMs - recvMs
	}
	if old := c.skewMs.Swap(skew); abs(skew) > c.cfg.MaxSkew.Milliseconds() && abs(old) <= c.cfg.MaxSkew.Milliseconds() {
		c.log.Warn("clock skew against the zookeeper leader beyond bound; not ready",
			"skew", time.Duration(skew)*time.Millisecond, "max_skew", c.cfg.MaxSkew)
	}
}
