package coordinator

import (
	"context"
	"errors"
	"maps"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// standbyView is what a holder sees of standby/ (standby.go): the
// standbys waiting for a slot, listed at each renew, less our own nodes,
// which it deletes instead. A standby waiting for our range shortens our
// reservation (renew).
type standbyView struct {
	c *Coordinator
	z *zkSession
	// own is our standby, which tells our own nodes from the others.
	own *standby
	// names is the last listing of standby/, less our own nodes; orphans
	// are those (deleted on the orphan tick). pending is the answer of
	// the listing still out, if any.
	names   []string
	orphans []string
	pending chan standbyListing
	// kinds says of each node listed whether a live session holds it (read
	// once a node): a persistent one is no standby.
	kinds map[string]bool
}

// waitingFor reports whether a standby in the last listing could take a
// slot of datacenter dc: one pinned to dc, or one that takes any slot.
func (v *standbyView) waitingFor(dc int) bool {
	for _, n := range v.names {
		if sdc, err := tree.ParseStandbyName(n); err == nil && (sdc == -1 || sdc == dc) {
			return true
		}
	}
	return false
}

// list reads the names in standby/, once a renew: a read of a node that is
// empty but while a standby waits. (Not a watch: every holder's armed
// watch would be re-set by go-zookeeper on each reconnect, and its v1.0.4
// sendSetWatches races its receive loop.) On an error (ZooKeeper away) the
// last listing stands; none: no standby.
//
// The renew waits for the listing standbyListWait at most: against a slow
// ZooKeeper a listing bounded only by the call timeout, and then the write,
// made one renew cycle longer than the standby horizon lasts, and the
// clock passed the ceiling. A listing still out then is not sent again:
// the renew goes on with the last one, and a later renew takes its answer.
func (v *standbyView) list(ctx context.Context) {
	if v.pending == nil {
		ch := make(chan standbyListing, 1)
		v.pending = ch
		// A copy for the listing's goroutine; none while no standby is known
		// (the common case: this runs at every renew).
		var known map[string]bool
		if len(v.kinds) > 0 {
			known = maps.Clone(v.kinds)
		}
		go func() {
			var names []string
			err := v.z.call(ctx, 0, func() (err error) {
				names, _, err = v.z.conn.Children(tree.StandbyPath(v.c.cfg.Root))
				return err
			})
			r := standbyListing{err: err}
			if err == nil {
				r.names = names // else possibly abandoned to the call: not to be read
				r.ephemeral = v.readKinds(ctx, names, known)
			}
			ch <- r
		}()
	}
	t := time.NewTimer(v.c.cfg.standbyListWait())
	defer t.Stop()
	select {
	case r := <-v.pending:
		v.pending = nil
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			v.names, v.orphans = nil, nil
		case r.err == nil:
			v.noteKinds(r.names, r.ephemeral)
			// Our own nodes (a standby node of ours left behind) wait for
			// nothing: they do not count, and the orphan tick deletes them.
			// Nor does a persistent node: no standby made it.
			var others, ours []string
			for _, n := range r.names {
				switch {
				case v.own.owns(n):
					ours = append(ours, n)
				case v.kinds[n]:
					others = append(others, n)
				}
			}
			v.names, v.orphans = others, ours
		}
	case <-t.C:
		v.c.log.Debug("listing of standby/ still out; renewing with the last one", "wait", v.c.cfg.standbyListWait())
	case <-ctx.Done():
	}
}

// cleanOrphans deletes the standby nodes of ours that the last listing
// found (a lost create that landed, a failed delete): each shortens our
// range's holders for nothing.
func (v *standbyView) cleanOrphans(ctx context.Context) {
	v.own.clean(ctx, v.orphans)
	v.orphans = nil
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

// readKinds reads, for each name in standby/ not in known, whether a live
// session holds it (its ephemeralOwner): one read a new node, not one a
// listing. It runs on the listing's goroutine: it reads nothing of the
// view's but its session. A node gone meanwhile is left out (the next
// listing drops it); a read that fails is tried again at the next listing.
func (v *standbyView) readKinds(ctx context.Context, names []string, known map[string]bool) map[string]bool {
	kinds := map[string]bool{}
	for _, n := range names {
		if _, ok := known[n]; ok {
			continue
		}
		var st *zk.Stat
		err := v.z.call(ctx, 0, func() (err error) {
			_, st, err = v.z.conn.Exists(tree.StandbyPath(v.c.cfg.Root) + "/" + n)
			return err
		})
		if err == nil && st != nil {
			kinds[n] = st.EphemeralOwner != 0
		}
	}
	return kinds
}

// noteKinds keeps what readKinds read, for the names still listed, and
// says once of a persistent node that it is damage: it counts as no
// standby, and shortens no horizon.
func (v *standbyView) noteKinds(names []string, kinds map[string]bool) {
	listed := make(map[string]bool, len(names))
	for _, n := range names {
		listed[n] = true
	}
	for n := range v.kinds {
		if !listed[n] {
			delete(v.kinds, n)
		}
	}
	if v.kinds == nil {
		v.kinds = map[string]bool{}
	}
	for n, ephemeral := range kinds {
		v.kinds[n] = ephemeral
		if !ephemeral {
			v.c.log.Warn("a persistent node in standby/ is no standby: not counted (no horizon is shortened for it)",
				"znode", tree.StandbyPath(v.c.cfg.Root)+"/"+n, "fix", "delete it")
		}
	}
}
