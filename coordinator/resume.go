package coordinator

import (
	"context"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// lostLease is a lease this process lost with its session (expired, or its
// node gone) while it knew what it had issued: its slot can be claimed
// again from that, not from the reservation it had written ahead of it.
// Nobody else can have issued in the slot since exactly when the slot node
// still holds our last confirmed write: every claim writes the slot node
// (a fenced write that changes its version and names the claim's lease
// node) before its first ID, and so do recover and repair.
type lostLease struct {
	slot snowflake.Slot
	// name is the lost lease node's name, which our writes put in the
	// slot record as its holder.
	name string
	// version is the slot node's version after our last confirmed write,
	// czxid its creation zxid: ZooKeeper never lowers a node's version, so
	// the same node at a lower one is a tree restored from a backup.
	version int32
	czxid   int64
	// looked: the slot node was read once since the loss (lostSlotWentBack).
	looked bool
	// floor is what the slot may resume from: the last timestamp we
	// issued, never below the floor the lost lease started from.
	floor int64
}

// keepLost remembers l, lost for reason with last its generator's last
// issued timestamp (Seal), for a claim of its slot to resume from. Only
// a lease lost with its session or node qualifies: one lost to a write of
// another (taken, refused, undecodable, missing) or to a rollback of the
// ensemble has no confirmed write of ours on top.
func (s *leaseLoop) keepLost(l *wonLease, reason string, last int64) {
	switch reason {
	case "expired", "node_gone":
		s.resume = &lostLease{slot: l.slot, name: l.name, version: l.version, czxid: l.czxid, floor: max(last, l.floor)}
	default:
		s.resume = nil
	}
}

// floorOf is the floor a claim of slot starts from, rec being the slot
// node just read: the stored reservation, or the last timestamp the
// previous holder recorded if that is higher (a hand edit). When rec is
// still our lost lease's last confirmed write (its holder and version, on
// the same node), it is what we issued (resumed): our own reservation
// guards only our own IDs. A record that shows another writer ends the
// hope of resuming.
func (s *leaseLoop) floorOf(slot snowflake.Slot, rec tree.SlotRecord) (floor int64, resumed bool) {
	stored := max(rec.ReservedUntilMs, rec.LastMs)
	r := s.resume
	if r == nil || r.slot != slot {
		return stored, false
	}
	if rec.Holder != r.name || rec.Version != r.version || rec.Czxid != r.czxid {
		s.c.log.Debug("our lost slot was written since: claiming it as any other", "slot", slot,
			"lost_lease", r.name, "holder", rec.Holder)
		s.resume = nil
		return stored, false
	}
	return r.floor, true
}

// resumed says, once l is claimed, that it resumed our lost slot.
func (s *leaseLoop) resumed(l *wonLease) {
	s.c.m.resumes.Inc()
	s.c.log.Info("resumed our own slot: nobody held it since we lost it", "slot", l.slot,
		"lost_lease", s.resume.name, "floor", time.UnixMilli(l.floor).UTC())
}

// preferLost picks our lost lease's slot among free when it is there.
func (s *leaseLoop) preferLost(free []snowflake.Slot) (snowflake.Slot, bool) {
	if s.resume == nil {
		return snowflake.Slot{}, false
	}
	for _, sl := range free {
		if sl == s.resume.slot {
			return sl, true
		}
	}
	return snowflake.Slot{}, false
}

// lostSlotWentBack reads the lost lease's slot node once before claiming
// again: the same node (its czxid) at a version below the one our last
// confirmed write gave it means the tree was restored from a backup. Every
// holder that lost its lease sees this, which the lease sequences do not
// show when other workers' creates since the restore numbered ours above
// what we saw, or the restore kept our session (#37). A read that fails is
// tried again at the next pass of claiming.
func (s *leaseLoop) lostSlotWentBack(ctx context.Context) (string, bool) {
	r := s.resume
	if r == nil || r.looked || r.czxid == 0 {
		return "", false
	}
	var st *zk.Stat
	err := s.call(ctx, 0, func() (err error) { _, st, err = s.conn.Exists(zklayout.SlotPath(s.c.cfg.Root, r.slot)); return })
	if err != nil || st == nil {
		return "", false // missing: damage, which the claim of it reports
	}
	r.looked = true
	if st.Czxid != r.czxid || st.Version >= r.version {
		return "", false
	}
	s.resume = nil
	return fmt.Sprintf("slot node %s is at version %d, below the %d our last confirmed write as %s gave it",
		r.slot, st.Version, r.version, r.name), true
}
