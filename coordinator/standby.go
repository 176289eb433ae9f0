package coordinator

import (
	"context"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
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

// runStandingBy is the standingBy state: it waits for a change of
// leases/ (the watch) and then a jitter, a periodic re-list, or ctx; then
// claiming lists again. Our standby node is shown while every candidate
// slot is held (allHeld), and hidden otherwise.
func (s *leaseLoop) runStandingBy(ctx context.Context) leaseState {
	c, b := s.c, s.standby
	if c.getState() != StateStandby {
		c.setState(StateStandby)
		b.relist = standbyRelist
	}
	s.sayWhyWaiting(b.allHeld)
	if b.allHeld {
		b.show(ctx) // once per session: holders of our range shorten
	} else {
		b.hide(ctx) // shortening would free nothing we could take
	}
	// Uniform in [relist/2, 3*relist/2): standbys started together drift apart.
	t := time.NewTimer(b.relist/2 + time.Duration(mrand.Int64N(int64(b.relist))))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-s.watch:
		s.watch = nil
		sleep(ctx, herdDelay(standbyJitter<<min(b.lostRaces, 2)))
	case <-t.C:
		b.relist = min(2*b.relist, standbyRelistMax)
	}
	return claiming
}

// standbyRetry is how long a standby whose node could not be made waits
// before trying again (the failure is logged once per try).
const standbyRetry = 30 * time.Second

// The standby herd: every standby is told of every change of leases/, and
// a freed slot is the same one for all of them. After a change each waits a
// random delay within standbyJitter before it lists; the first to list
// creates, and those listing after its create find the slot taken. Only
// those listing within one list-and-create time of the first create too,
// so the delays are drawn from a truncated exponential (few early, most
// late; Nonnenmacher and Biersack's feedback suppression): the first of n
// standbys acts alone well before the window ends (about 0.4 of it for
// n=100), where a uniform draw would put n/window of them in each ms.
// Changes during the wait cost nothing: the one-shot watch is armed again
// only by the next listing. A standby that lost a race waits in a window
// twice (then four times) as long, leaving the next slot to others. The
// periodic re-list (for a watch lost with a session) backs off from
// standbyRelist to standbyRelistMax while nothing is free.
const (
	standbyJitter    = 800 * time.Millisecond
	standbyLambda    = 10.0 // steepness of the truncated exponential
	standbyRelist    = 2 * time.Second
	standbyRelistMax = 30 * time.Second
	// standbySlowList: a standby's listing slower than this (ZooKeeper
	// stalled, and answered the standbys that woke meanwhile all at once)
	// is followed by one more jittered delay and listing before creating.
	standbySlowList = 100 * time.Millisecond
)

// herdDelay draws a delay in [0, window) with density proportional to
// exp(standbyLambda*t/window).
func herdDelay(window time.Duration) time.Duration {
	u := mrand.Float64()
	return time.Duration(float64(window) * math.Log1p(u*math.Expm1(standbyLambda)) / standbyLambda)
}

// standby is this worker standing by on one session: its node in
// standby/ while every slot it may take is held, the creates of ours that
// may have left one behind, and the herd's spacing of its re-lists.
type standby struct {
	c *Coordinator
	z *zkSession
	// node is our standby node while we stand by, made by the create of
	// guid and owned by session; retryAt delays a retry after a failure.
	node    string
	guid    string
	session int64
	retryAt time.Time
	// guids are the GUIDs of our standby creates whose node may exist
	// (not known deleted); sessions the sessions named in them. A node in
	// standby/ with either is ours (owns).
	guids    map[string]struct{}
	sessions map[int64]struct{}
	// relist is the current periodic re-list interval, backed off while
	// nothing is free; lostRaces counts claims lost to a lower node since
	// the last won, widening the jitter window; relisted: we listed again
	// after a slow listing.
	relist    time.Duration
	lostRaces int
	relisted  bool
	// allHeld: every slot we may take is held (everyHeld), so our node is
	// shown; set by claiming as it goes to standingBy.
	allHeld bool
}

// show makes our standby node, once per session; a failure (an ACL on
// the root, say) is logged and retried after standbyRetry: the worker
// stands by all the same, only holders keep their full horizon. A create
// whose answer was lost is looked for by its name (its GUID), and kept only
// if our current session owns it.
func (b *standby) show(ctx context.Context) {
	c, z := b.c, b.z
	sid := z.conn.SessionID()
	if sid == 0 || (b.node != "" && b.session == sid) || time.Now().Before(b.retryAt) {
		return
	}
	if b.node != "" {
		b.hide(ctx) // made on a session since gone: delete it, should it be ours still
	}
	dir := tree.StandbyPath(c.cfg.Root)
	guid := tree.NewGUID()
	p := dir + "/" + tree.StandbyName(guid, c.cfg.Datacenter, sid)
	data := zklayout.EncodeLease(c.leaseData(time.Now()))
	b.track(guid, sid)
	create := func() error {
		return z.call(ctx, 0, func() error {
			_, err := z.conn.Create(p, data, zk.FlagEphemeral, c.nodeACL)
			return err
		})
	}
	err := create()
	if errors.Is(err, zk.ErrNoNode) {
		// The first standby of the root makes standby/ (persistent).
		err = z.call(ctx, 0, func() error {
			_, err := z.conn.Create(dir, nil, 0, c.dirACL)
			return err
		})
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			err = create()
		}
	}
	if err != nil && !unknownOutcome(err) {
		delete(b.guids, guid) // refused: no node was made
		b.retryAt = time.Now().Add(standbyRetry)
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
	xerr := z.call(ctx, 0, func() (err error) { ok, st, err = z.conn.Exists(p); return })
	switch {
	case xerr != nil || !ok:
		// Unknown, or not (yet) there: its GUID stays tracked, so a node
		// that lands later is deleted once we hold a slot.
		c.log.Debug("standby node create outcome unknown; trying again", "path", p, "error", errors.Join(err, xerr))
		return
	case st.EphemeralOwner != z.conn.SessionID():
		c.log.Debug("standby node belongs to another session of ours; deleting it", "path", p,
			"owner", fmt.Sprintf("%x", st.EphemeralOwner))
		b.delete(ctx, p, guid)
		return
	}
	b.node, b.guid, b.session = p, guid, st.EphemeralOwner
}

// track remembers a standby create of ours: its GUID until its node is
// known gone, the session named in it for the session's life.
func (b *standby) track(guid string, sid int64) {
	if b.guids == nil {
		b.guids = map[string]struct{}{}
		b.sessions = map[int64]struct{}{}
	}
	b.guids[guid] = struct{}{}
	b.sessions[sid] = struct{}{}
}

// owns reports whether a node in standby/ is ours but not the one we
// show: made by a create of ours (its GUID), or named for a session of
// ours (one we made standby nodes on, or the current one).
func (b *standby) owns(name string) bool {
	if b.node != "" && name == path.Base(b.node) {
		return false
	}
	_, guid, sid, err := tree.ParseStandby(name)
	if err != nil {
		return false
	}
	if _, ok := b.guids[guid]; ok && guid != "" {
		return true
	}
	if _, ok := b.sessions[sid]; ok {
		return true
	}
	return sid != 0 && sid == b.z.conn.SessionID()
}

// delete deletes a standby node of ours; its GUID is forgotten once the
// node is known gone. false when the delete failed.
func (b *standby) delete(ctx context.Context, p, guid string) bool {
	if !b.z.deletePath(ctx, p) {
		return false
	}
	if guid != "" {
		delete(b.guids, guid)
	}
	return true
}

// hide deletes our standby node, once we hold a slot or may take one, and
// any other standby node of ours (a lost create that landed).
func (b *standby) hide(ctx context.Context) {
	if b.node != "" {
		if !b.delete(ctx, b.node, b.guid) {
			// Its GUID stays tracked: the orphan tick deletes it.
			b.c.log.Warn("cannot delete our standby node; deleting it later (meanwhile holders of our range keep the standby horizon)",
				"path", b.node)
		}
		b.node, b.guid, b.session = "", "", 0
	}
	if len(b.guids) == 0 {
		return
	}
	var names []string
	if err := b.z.call(ctx, 0, func() (err error) {
		names, _, err = b.z.conn.Children(tree.StandbyPath(b.c.cfg.Root))
		return err
	}); err != nil {
		return // the orphan tick looks again
	}
	b.clean(ctx, names)
}

// clean deletes the standby nodes named in names that are ours (owns):
// while we hold a slot, or may take one, each would shorten the
// reservations of our range's holders for nothing, for as long as the
// session that owns it lives.
func (b *standby) clean(ctx context.Context, names []string) {
	for _, n := range names {
		if !b.owns(n) {
			continue
		}
		_, guid, _, _ := tree.ParseStandby(n)
		p := tree.StandbyPath(b.c.cfg.Root) + "/" + n
		if b.delete(ctx, p, guid) {
			b.c.log.Info("deleted a standby node of ours left behind", "path", p)
		} else {
			b.c.log.Debug("cannot delete a standby node of ours left behind; trying again", "path", p)
		}
	}
}
