package coordinator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// Standbys make themselves visible, so that holders shorten their
// reservations only while it buys something: a waiting standby's takeover
// after a crash. A standby shows itself only while every slot it may take
// is held: one that merely avoids the free ones (its clock far behind
// their reservations, a refused or damaged slot node) could take nothing
// a holder's shortening frees. Each standby has one ephemeral node under
// standby/, named as a protected node (as lease nodes are) for the range
// it waits for and the session it was made on:
//
//	/snowflake/standby/
//	  _c_<guid>-dc03-s0123456789abcdef   a standby pinned to datacenter 3
//	  _c_<guid>-any-s0123456789abcdef    a standby that takes any slot
//
// with JSON {addr, http, host, pid, version, since}, as a lease node.
// (Builds before the GUID named them dc03-s<session> and any-s<session>;
// both are read.) The GUID is fresh for every create, so a create whose
// answer was lost is looked for by its exact name and its ephemeralOwner
// checked, and a node of ours left behind (a lost create that lands later,
// even on a later session; a delete that failed) is known by its GUID or
// by a session of ours in its name: a holder deletes those when it takes
// a slot and on its orphan tick, and does not let them shorten its own
// reservation. standby/ itself is made by the first standby (it is
// advisory: a missing or refused node costs only the shortening, never an
// ID). Holders list standby/ at each renew.

// standbyRetry is how long a standby whose node could not be made waits
// before trying again (the failure is logged once per try).
const standbyRetry = 30 * time.Second

// standbyCounts reports whether a standby named in names could take a slot
// of datacenter dc: one pinned to dc, or one that takes any slot.
func standbyCounts(names []string, dc int) bool {
	for _, n := range names {
		if sdc, err := tree.ParseStandbyName(n); err == nil && (sdc == -1 || sdc == dc) {
			return true
		}
	}
	return false
}

// showStandby makes our standby node, once per session; a failure (an ACL
// on the root, say) is logged and retried after standbyRetry: the worker
// stands by all the same, only holders keep their full horizon. A create
// whose answer was lost is looked for by its name (its GUID), and kept only
// if our current session owns it.
func (s *claimer) showStandby(ctx context.Context) {
	c := s.c
	sid := s.conn.SessionID()
	if sid == 0 || (s.standbyNode != "" && s.standbySession == sid) || time.Now().Before(s.standbyRetryAt) {
		return
	}
	if s.standbyNode != "" {
		s.hideStandby(ctx) // made on a session since gone: delete it, should it be ours still
	}
	dir := tree.StandbyPath(c.cfg.Root)
	guid := tree.NewGUID()
	p := dir + "/" + tree.StandbyName(guid, c.cfg.Datacenter, sid)
	data := zklayout.EncodeLease(c.leaseData(time.Now()))
	s.trackStandby(guid, sid)
	create := func() error {
		return s.call(ctx, 0, func() error {
			_, err := s.conn.Create(p, data, zk.FlagEphemeral, c.nodeACL)
			return err
		})
	}
	err := create()
	if errors.Is(err, zk.ErrNoNode) {
		// The first standby of the root makes standby/ (persistent).
		err = s.call(ctx, 0, func() error {
			_, err := s.conn.Create(dir, nil, 0, c.dirACL)
			return err
		})
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			err = create()
		}
	}
	if err != nil && !unknownOutcome(err) {
		delete(s.standbyGUIDs, guid) // refused: no node was made
		s.standbyRetryAt = time.Now().Add(standbyRetry)
		c.log.Warn("cannot create our standby node; standing by unseen (holders keep their full horizon)",
			"path", p, "retry_in", standbyRetry, "error", err)
		return
	}
	// Made, or perhaps (the answer lost): which session owns it? A create
	// go-zookeeper resent on a later session belongs to that one.
	var (
		ok bool
		st *zk.Stat
	)
	xerr := s.call(ctx, 0, func() (err error) { ok, st, err = s.conn.Exists(p); return })
	switch {
	case xerr != nil || !ok:
		// Unknown, or not (yet) there: its GUID stays tracked, so a node
		// that lands later is deleted once we hold a slot.
		c.log.Debug("standby node create outcome unknown; trying again", "path", p, "error", errors.Join(err, xerr))
		return
	case st.EphemeralOwner != s.conn.SessionID():
		c.log.Debug("standby node belongs to another session of ours; deleting it", "path", p,
			"owner", fmt.Sprintf("%x", st.EphemeralOwner))
		s.deleteStandby(ctx, p, guid)
		return
	}
	s.standbyNode, s.standbyGUID, s.standbySession = p, guid, st.EphemeralOwner
}

// trackStandby remembers a standby create of ours: its GUID until its node
// is known gone, the session named in it for the session's life.
func (s *claimer) trackStandby(guid string, sid int64) {
	if s.standbyGUIDs == nil {
		s.standbyGUIDs = map[string]struct{}{}
		s.standbySessions = map[int64]struct{}{}
	}
	s.standbyGUIDs[guid] = struct{}{}
	s.standbySessions[sid] = struct{}{}
}

// ownStandby reports whether a node in standby/ is ours but not the one we
// show: made by a create of ours (its GUID), or named for a session of
// ours (one we made standby nodes on, or the current one).
func (s *claimer) ownStandby(name string) bool {
	if s.standbyNode != "" && name == path.Base(s.standbyNode) {
		return false
	}
	_, guid, sid, err := tree.ParseStandby(name)
	if err != nil {
		return false
	}
	if _, ok := s.standbyGUIDs[guid]; ok && guid != "" {
		return true
	}
	if _, ok := s.standbySessions[sid]; ok {
		return true
	}
	return sid != 0 && sid == s.conn.SessionID()
}

// deleteStandby deletes a standby node of ours; its GUID is forgotten once
// the node is known gone. false when the delete failed.
func (s *claimer) deleteStandby(ctx context.Context, p, guid string) bool {
	if !s.deletePath(ctx, p) {
		return false
	}
	if guid != "" {
		delete(s.standbyGUIDs, guid)
	}
	return true
}

// hideStandby deletes our standby node, once we hold a slot or may take
// one, and any other standby node of ours (a lost create that landed).
func (s *claimer) hideStandby(ctx context.Context) {
	if s.standbyNode != "" {
		if !s.deleteStandby(ctx, s.standbyNode, s.standbyGUID) {
			// Its GUID stays tracked: the orphan tick deletes it.
			s.c.log.Warn("cannot delete our standby node; deleting it later (meanwhile holders of our range keep the standby horizon)",
				"path", s.standbyNode)
		}
		s.standbyNode, s.standbyGUID, s.standbySession = "", "", 0
	}
	if len(s.standbyGUIDs) == 0 {
		return
	}
	var names []string
	if err := s.call(ctx, 0, func() (err error) {
		names, _, err = s.conn.Children(tree.StandbyPath(s.c.cfg.Root))
		return err
	}); err != nil {
		return // the orphan tick looks again
	}
	s.cleanStandbys(ctx, names)
}

// cleanStandbys deletes the standby nodes named in names that are ours
// (ownStandby): while we hold a slot, or may take one, each would shorten
// the reservations of our range's holders for nothing, for as long as the
// session that owns it lives.
func (s *claimer) cleanStandbys(ctx context.Context, names []string) {
	for _, n := range names {
		if !s.ownStandby(n) {
			continue
		}
		_, guid, _, _ := tree.ParseStandby(n)
		p := tree.StandbyPath(s.c.cfg.Root) + "/" + n
		if s.deleteStandby(ctx, p, guid) {
			s.c.log.Info("deleted a standby node of ours left behind", "path", p)
		} else {
			s.c.log.Debug("cannot delete a standby node of ours left behind; trying again", "path", p)
		}
	}
}

// listStandbys reads the names in standby/ into standbyNames, once a
// renew: a read of a node that is empty but while a standby waits. (Not a
// watch: every holder's armed watch would be re-set by go-zookeeper on each
// reconnect, and its v1.0.4 sendSetWatches races its receive loop.) On an
// error (ZooKeeper away) the last listing stands; none: no standby.
//
// The renew waits for the listing standbyListWait at most: against a slow
// ZooKeeper a listing bounded only by the call timeout, and then the write,
// made one renew cycle longer than the standby horizon lasts, and the
// clock passed the ceiling. A listing still out then is not sent again:
// the renew goes on with the last one, and a later renew takes its answer.
func (s *claimer) listStandbys(ctx context.Context) {
	if s.standbyList == nil {
		ch := make(chan standbyListing, 1)
		s.standbyList = ch
		// A copy for the listing's goroutine; none while no standby is known
		// (the common case: this runs at every renew).
		var known map[string]bool
		if len(s.standbyKinds) > 0 {
			known = maps.Clone(s.standbyKinds)
		}
		go func() {
			var names []string
			err := s.call(ctx, 0, func() (err error) {
				names, _, err = s.conn.Children(tree.StandbyPath(s.c.cfg.Root))
				return err
			})
			r := standbyListing{err: err}
			if err == nil {
				r.names = names // else possibly abandoned to the call: not to be read
				r.ephemeral = s.readStandbyKinds(ctx, names, known)
			}
			ch <- r
		}()
	}
	t := time.NewTimer(s.c.cfg.standbyListWait())
	defer t.Stop()
	select {
	case r := <-s.standbyList:
		s.standbyList = nil
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			s.standbyNames, s.standbyOrphans = nil, nil
		case r.err == nil:
			s.noteStandbyKinds(r.names, r.ephemeral)
			// Our own nodes (a standby node of ours left behind) wait for
			// nothing: they do not count, and the orphan tick deletes them.
			// Nor does a persistent node: no standby made it.
			var others, ours []string
			for _, n := range r.names {
				switch {
				case s.ownStandby(n):
					ours = append(ours, n)
				case s.standbyKinds[n]:
					others = append(others, n)
				}
			}
			s.standbyNames, s.standbyOrphans = others, ours
		}
	case <-t.C:
		s.c.log.Debug("listing of standby/ still out; renewing with the last one", "wait", s.c.cfg.standbyListWait())
	case <-ctx.Done():
	}
}

// standbyListing is the answer to a listing of standby/.
type standbyListing struct {
	names []string
	err   error
	// ephemeral says, of each name not known before the listing, whether
	// a live session holds it (read once: a node's kind never changes).
	ephemeral map[string]bool
}

// horizonFor is the horizon a holder reserves with: StandbyHorizon while a
// standby waits for its range, else Horizon.
func (c *Coordinator) horizonFor(standbyWaiting bool) time.Duration {
	if standbyWaiting {
		return c.cfg.standbyHorizon()
	}
	return c.cfg.Horizon
}

// readStandbyKinds reads, for each name in standby/ not in known, whether
// a live session holds it (its ephemeralOwner): one read a new node, not
// one a listing. It runs on the listing's goroutine: it reads nothing of
// the claimer's but its session. A node gone meanwhile is left out (the next listing
// drops it); a read that fails is tried again at the next listing.
func (s *claimer) readStandbyKinds(ctx context.Context, names []string, known map[string]bool) map[string]bool {
	kinds := map[string]bool{}
	for _, n := range names {
		if _, ok := known[n]; ok {
			continue
		}
		var st *zk.Stat
		err := s.call(ctx, 0, func() (err error) {
			_, st, err = s.conn.Exists(tree.StandbyPath(s.c.cfg.Root) + "/" + n)
			return err
		})
		if err == nil && st != nil {
			kinds[n] = st.EphemeralOwner != 0
		}
	}
	return kinds
}

// noteStandbyKinds keeps what readStandbyKinds read, for the names still
// listed, and says once of a persistent node that it is damage: it counts
// as no standby, and shortens no horizon.
func (s *claimer) noteStandbyKinds(names []string, kinds map[string]bool) {
	listed := make(map[string]bool, len(names))
	for _, n := range names {
		listed[n] = true
	}
	for n := range s.standbyKinds {
		if !listed[n] {
			delete(s.standbyKinds, n)
		}
	}
	if s.standbyKinds == nil {
		s.standbyKinds = map[string]bool{}
	}
	for n, ephemeral := range kinds {
		s.standbyKinds[n] = ephemeral
		if !ephemeral {
			s.c.log.Warn("a persistent node in standby/ is no standby: not counted (no horizon is shortened for it)",
				"znode", tree.StandbyPath(s.c.cfg.Root)+"/"+n, "fix", "delete it")
		}
	}
}
