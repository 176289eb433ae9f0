package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// ErrWentBack: the ensemble went back in time (restored from a backup): a
// lease node this worker made has a sequence below one it saw before under
// the same root, the ensemble refused our session for a zxid it has not
// seen, or the slot node of a lease we lost, or of one we hold, is at a
// version below the one our last confirmed write gave it (resume.go,
// heldSlotWentBack). Its slot records may be
// older than what holders issued since; the worker claims nothing until
// snowflakectl recover has run.
var ErrWentBack = errors.New("zookeeper went back in time")

// rollbackWatch notices an ensemble restored from a backup while this
// worker runs. The sequence ZooKeeper appends to a lease node is leases/'s
// child version, which only grows while the tree is kept; under the same
// root (its czxid and ctime), a new node of ours numbered at or below one
// seen before means the tree was rolled back.
type rollbackWatch struct {
	czxid, ctime int64 // the root's identity, from checkRoot
	seen         int64 // the highest lease sequence seen under it
	valid        bool  // seen was set
	lastMs       int64 // our clock at the listing that last raised seen
	// forged are the names listed whose sequence ZooKeeper's counter has
	// not reached: not made by a sequential create, so not evidence.
	forged map[string]struct{}
}

// reset forgets the sequences seen: a root read afresh (made again, or
// repaired) starts a new history.
func (r *rollbackWatch) reset(st *zk.Stat) {
	*r = rollbackWatch{}
	if st != nil {
		r.czxid, r.ctime = st.Czxid, st.Ctime
	}
}

// note records the sequences of a listing of leases/ whose child counter
// (its cversion, read with the names) was cversion. A sequential create
// numbers its node with the counter before it, so every such node is
// numbered below the counter; one numbered at or past it was made with a
// name of its maker's choosing (a plain create), and would otherwise make
// every later claim look like a rollback: it is left out, and returned
// the first time it is seen.
func (r *rollbackWatch) note(names []string, cversion int32, nowMs int64) (forged []string) {
	for _, n := range names {
		_, seq, err := zklayout.ParseLeaseName(n)
		if err != nil {
			continue
		}
		if !zklayout.LeaseSeqBefore(seq, int64(cversion)) {
			if _, ok := r.forged[n]; !ok {
				if r.forged == nil {
					r.forged = map[string]struct{}{}
				}
				r.forged[n] = struct{}{}
				forged = append(forged, n)
			}
			continue
		}
		if !r.valid || zklayout.LeaseSeqBefore(r.seen, seq) {
			r.seen, r.valid, r.lastMs = seq, true, nowMs
		}
	}
	return forged
}

// wentBack reports whether our new lease node, named name, is numbered at
// or below a sequence seen before.
func (r *rollbackWatch) wentBack(name string) (bool, int64) {
	_, seq, err := zklayout.ParseLeaseName(name)
	if err != nil || !r.valid {
		return false, 0
	}
	return !zklayout.LeaseSeqBefore(r.seen, seq), seq
}

// recoverWait is what waitingRecover waits for: a recover run after
// since, the worker's last confirmed write or listing before it saw the
// rollback (lastConfirmed, taken before the create that revealed it): a
// recover run before the worker came back, as the runbook has it, lets it
// claim at once. why is the evidence, said and counted on entering; ""
// when it was said where it was seen (heldSlotWentBack).
type recoverWait struct {
	why   string
	since int64
}

// runWaitingRecover is the waitingRecover state: it claims nothing until
// the root shows that snowflakectl recover ran after s.recover.since, or
// that the root was made again; then claiming. A root gone is damage.
func (s *leaseLoop) runWaitingRecover(ctx context.Context) leaseState {
	w := s.recover
	s.recover = recoverWait{}
	if w.why != "" {
		c := s.c
		c.m.rollbacks.Inc()
		c.log.Error("zookeeper went back in time (restored from a backup?); not claiming until snowflakectl recover runs", "error", ErrWentBack,
			"root", c.cfg.Root, "evidence", w.why,
			"fix", "snowflakectl recover (deploy/runbook.md: ZooKeeper was restored from a backup)")
	}
	switch err := s.waitForRecover(ctx, w.since); {
	case err == nil:
		return claiming
	case errors.Is(err, tree.ErrDamaged):
		return s.damaged(err)
	default:
		return done // ctx ended
	}
}

// heldSlotWentBack: our slot node, still naming our lease, answered a
// write at a version below the one our last confirmed write gave it. Only
// a restore that kept our session and our lease node does that (ZooKeeper
// never lowers a version; a node made again has another czxid). Our slot
// is safe, since we keep our ceiling and hold the lowest node, so we serve
// on; but other slots may be handed out from older reservations, so it is
// said and counted now, and once this lease ends we claim nothing until a
// recover has run after what we knew before it.
func (s *leaseLoop) heldSlotWentBack(l *wonLease, version int32) {
	if s.backWhileHeld != "" {
		return
	}
	c := s.c
	s.backWhileHeld = fmt.Sprintf("slot node %s, which still names our lease %s, is at version %d, below the %d our last confirmed write gave it",
		l.slot, l.name, version, l.version)
	s.backSince = s.lastConfirmed()
	c.m.rollbacks.Inc()
	c.log.Error("zookeeper went back in time (restored from a backup?); our lease survived it and we serve on, but other slots may be handed out from older reservations",
		"error", ErrWentBack, "root", c.cfg.Root, "evidence", s.backWhileHeld,
		"fix", "snowflakectl recover (deploy/runbook.md: ZooKeeper was restored from a backup)")
}

// waitForRecover waits, not claiming, until the root shows that
// snowflakectl recover ran after since (a root written later, by
// ZooKeeper's clock, naming a recovery), or until the root was made again
// (another czxid or ctime): nil. A root gone is a *damage; ctx ending,
// its error.
func (s *leaseLoop) waitForRecover(ctx context.Context, since int64) error {
	c := s.c
	c.setWaiting(ReasonAwaitingRecover, 0)
	defer c.setWaiting(ReasonNoLease, 0)
	for {
		var (
			data []byte
			st   *zk.Stat
		)
		err := s.call(ctx, 0, func() (err error) { data, st, err = s.conn.Get(c.cfg.Root); return })
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			c.answered()
		}
		switch {
		case errors.Is(err, zk.ErrNoNode):
			return &damage{kind: "root", path: c.cfg.Root}
		case err == nil:
			if st.Czxid != s.rollback.czxid || st.Ctime != s.rollback.ctime {
				s.rollback.reset(st)
				c.log.Info("the root was made again; claiming", "root", c.cfg.Root)
				return nil
			}
			if info, derr := tree.DecodeRoot(c.cfg.Root, data); derr == nil && info.Recovery != "" && st.Mtime > since {
				s.rollback.reset(st)
				c.log.Info("snowflakectl recover ran; claiming", "root", c.cfg.Root, "recovery", info.Recovery)
				return nil
			}
		}
		if !sleep(ctx, damagedRecheck) {
			return ctx.Err()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// lastConfirmed is the latest time, by ZooKeeper's clock or ours, at which
// this worker knew the tree as it was: its last confirmed write, or the
// listing that last raised the sequences it saw. A recover that ran after
// it covers whatever the worker issued before.
func (s *leaseLoop) lastConfirmed() int64 {
	return max(s.c.mtimeMs.Load(), s.rollback.lastMs)
}
