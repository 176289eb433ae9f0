package coordinator

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// wonLease is one won lease node and the reservation confirmed for it.
type wonLease struct {
	slot    snowflake.Slot
	name    string // node name in leases/
	path    string
	guid    string
	session int64 // the session that owns the node
	// floor is the slot's reservation found at claim: this lease issues
	// only timestamps above it.
	floor int64
	// ceiling is the highest reservation confirmed by a fenced write.
	ceiling int64
	// version is the slot node's version after our last confirmed write;
	// czxid is the slot node's creation zxid, which tells it from a node
	// made again in its place.
	version int32
	czxid   int64
	// resumed: the floor is what this process issued in the slot before
	// it lost it, nobody having held it since (resume.go).
	resumed bool
	// holder is what our lease node says of us, startMs our clock at the
	// claim, history the slot's tenures before ours (read at claim), and
	// releasing marks the release's write: every fenced write carries the
	// history with our tenure as it stands (tenure.go).
	holder    zklayout.LeaseData
	startMs   int64
	history   tree.History
	releasing bool
}

// runClaiming is the claiming state: it lists leases/, picks a free slot
// (our lost one first), creates our lease node, keeps it if it is the
// slot's lowest and makes the first fenced reservation (reserve), trying
// another slot or again until one is won: then serving. It stands by
// while no slot it may take is free, waits for recover when it sees the
// ensemble went back in time, reads the root again on damage (it may
// have been made again, with other ranges or bounds), and stops on ctx or
// a fault retrying cannot fix.
func (s *leaseLoop) runClaiming(ctx context.Context) leaseState {
	c := s.c
	var names []string
	fresh := false // names is a listing taken after our last create
	var listTook time.Duration
	for {
		if ctx.Err() != nil {
			return done
		}
		if c.refused.Load() {
			return sessionRefused
		}
		if s.claimStart.IsZero() {
			// A claim begins (not one coming back from standing by or
			// from a recover).
			s.claimStart = time.Now()
			c.setState(StateClaiming)
		}
		if why, back := s.lostSlotWentBack(ctx); back {
			s.recover = recoverWait{why: why, since: s.lastConfirmed()}
			return waitingRecover
		}
		if s.backWhileHeld != "" {
			s.recover = recoverWait{since: s.backSince} // said and counted when it was seen
			s.backWhileHeld = ""
			return waitingRecover
		}
		if err := c.checkIDSpace(); err != nil {
			return s.stop(err) // the clock passed the end while we claimed
		}
		if !fresh {
			var err error
			listed := time.Now()
			names, err = s.list(ctx)
			listTook = time.Since(listed)
			if err != nil {
				if fatal(err) {
					return s.stop(err)
				}
				if errors.Is(err, zk.ErrNoNode) {
					if derr := s.checkTree(ctx); errors.Is(derr, tree.ErrDamaged) {
						return s.damaged(derr)
					}
				}
				c.log.Debug("cannot list leases; retrying", "error", err)
				sleep(ctx, 200*time.Millisecond)
				continue
			}
		}
		fresh = false
		s.cleanOrphans(ctx, names)
		free := s.freeSlots(names)
		if len(free) == 0 {
			if err := s.allRefused(); err != nil {
				return s.stop(err)
			}
			s.standby.allHeld = s.everyHeld(names)
			return standingBy
		}
		if c.getState() == StateStandby {
			if listTook > standbySlowList && !s.standby.relisted {
				// ZooKeeper stalled: the standbys that woke meanwhile got
				// this same answer at once; spread them out again.
				s.standby.relisted = true
				sleep(ctx, herdDelay(standbyJitter))
				continue
			}
			c.setState(StateClaiming)
		}
		s.standby.relisted = false
		slot, own := s.preferLost(free)
		if !own {
			slot = free[mrand.IntN(len(free))]
		}
		if !own && s.far != 0 && s.reservedFar(ctx, slot) {
			continue // no lease node made and deleted for a slot we cannot take
		}
		// The create stamps its own time (observeSkew): what the worker
		// knew before it is what a recover must have followed.
		known := s.lastConfirmed()
		l, err := s.createLease(ctx, slot)
		if err != nil {
			if fatal(err) {
				return s.stop(err)
			}
			c.log.Debug("lease node create failed; retrying", "slot", slot, "error", err)
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		if back, seq := s.rollback.wentBack(l.name); back {
			s.deleteLease(ctx, l)
			s.recover = recoverWait{why: fmt.Sprintf("our new lease node's sequence %d is at or below %d, seen before", seq, s.rollback.seen), since: known}
			return waitingRecover
		}
		// Lowest sequence per slot wins. This listing is read after our
		// create, so every older node of the slot is in it, and it is fresh
		// for the next pick if we lost.
		if names, err = s.list(ctx); err != nil {
			s.deleteLease(ctx, l)
			continue
		}
		fresh = true
		if h, ok := zklayout.Holders(names)[slot]; !ok || h.Name != l.name {
			s.deleteLease(ctx, l)
			s.standby.lostRaces++
			continue
		}
		switch res, err := s.reserve(ctx, l); res {
		case reserveUnusable:
			// Avoided (and said) before the node goes: whoever sees it
			// gone finds the slot avoided and the damage counted.
			u, _ := unusableSlot(err)
			s.avoidSlot(u)
			s.deleteLease(ctx, l)
			fresh = false
			continue
		case reserveFailed:
			s.deleteLease(ctx, l)
			if errors.Is(err, tree.ErrDamaged) {
				return s.damaged(err)
			}
			return s.stop(err)
		case reserveGaveUp:
			fresh = false
			continue
		}
		return s.claimed(ctx, l)
	}
}

// claimed ends a claim that won l: what the claim waited for is over (a
// lost slot to resume, a standby node, the reasons it took no slot).
func (s *leaseLoop) claimed(ctx context.Context, l *wonLease) leaseState {
	c := s.c
	if l.resumed {
		s.resumed(l)
	}
	s.resume = nil // a lease lost later is the one to resume
	s.standby.lostRaces = 0
	s.waiting, s.far = "", 0
	c.setWaiting(ReasonNoLease, 0) // a lease lost later waits afresh
	s.standby.hide(ctx)
	c.claims.Add(1)
	c.m.claimTime.Observe(time.Since(s.claimStart).Seconds())
	s.claimStart = time.Time{}
	s.won = l
	return serving
}

// fatal: errors that retrying cannot fix.
func fatal(err error) bool {
	return errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrAuthFailed) || errors.Is(err, zk.ErrInvalidACL)
}

// list reads leases/, arming the one-shot watch if none is armed: re-arming
// on every read would add a watcher each time until the next change. Every
// listing goes to the restore detector with the child counter read with it.
func (s *leaseLoop) list(ctx context.Context) ([]string, error) {
	var (
		names []string
		st    *zk.Stat
		w     <-chan zk.Event
	)
	armed := s.watch != nil
	s.c.lists.Add(1)
	err := s.call(ctx, 0, func() (err error) {
		if armed {
			names, st, err = s.conn.Children(zklayout.LeasesPath(s.c.cfg.Root))
		} else {
			names, st, w, err = s.conn.ChildrenW(zklayout.LeasesPath(s.c.cfg.Root))
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", zklayout.LeasesPath(s.c.cfg.Root), err)
	}
	if !armed {
		s.watch = w
	}
	if st != nil {
		s.noteSequences(names, st.Cversion)
	}
	return names, nil
}

// noteSequences gives the restore detector a listing of leases/ and the
// child counter (cversion) read with it, and says once each lease node
// whose name no sequential create made.
func (s *leaseLoop) noteSequences(names []string, counter int32) {
	for _, n := range s.rollback.note(names, counter, time.Now().UnixMilli()) {
		s.c.m.forgedLeases.Inc()
		s.c.log.Warn("a lease node is numbered past leases/' counter: made with a chosen name, not by a worker; not taken as a sign of a restore",
			"node", zklayout.LeasesPath(s.c.cfg.Root)+"/"+n, "counter", counter,
			"fix", "delete it (zkCli: delete <node>); a secured fleet lets only the workers' identity create in leases/")
	}
}

// cleanOrphans deletes nodes of our creates whose answer was lost: such a
// node blocks its slot for as long as the session that owns it lives. That
// may be a later session than the create's: go-zookeeper sends a call
// queued during a partition on the next session, so orphans are known by
// GUID alone and looked for in every listing, whichever session made it.
func (s *leaseLoop) cleanOrphans(ctx context.Context, names []string) {
	if len(s.orphans) == 0 {
		return
	}
	for _, n := range names {
		if !strings.HasPrefix(n, tree.ProtectedPrefix) || len(n) < len(tree.ProtectedPrefix)+32 {
			continue
		}
		g := n[len(tree.ProtectedPrefix) : len(tree.ProtectedPrefix)+32]
		if _, ok := s.orphans[g]; ok {
			if s.deletePath(ctx, zklayout.LeasesPath(s.c.cfg.Root)+"/"+n) {
				delete(s.orphans, g)
			}
		}
	}
}

// candidates are the slots this worker may claim: inside the fleet's
// datacenters, and inside --datacenter when pinned.
func (s *leaseLoop) candidates() []snowflake.Slot {
	dc := s.c.cfg.Datacenter
	cands := make([]snowflake.Slot, 0, len(s.c.space))
	for _, sl := range s.c.space {
		if s.owned.Has(sl.Datacenter) && (dc < 0 || sl.Datacenter == dc) {
			cands = append(cands, sl)
		}
	}
	return cands
}

// allSlots is every slot, in the order of snowflake.SlotAt.
func allSlots() []snowflake.Slot {
	all := make([]snowflake.Slot, snowflake.Slots)
	for i := range all {
		all[i] = snowflake.SlotAt(i)
	}
	return all
}

// freeSlots are the candidate slots no lease node names.
func (s *leaseLoop) freeSlots(names []string) []snowflake.Slot {
	held := zklayout.Holders(names)
	now := time.Now()
	cands := s.candidates()
	free := make([]snowflake.Slot, 0, len(cands))
	for _, sl := range cands {
		if _, ok := held[sl]; ok {
			continue
		}
		if a, ok := s.avoid[sl]; ok {
			if now.Before(a.until) {
				continue
			}
			delete(s.avoid, sl)
		}
		free = append(free, sl)
	}
	return free
}

// everyHeld reports whether a lease node holds every candidate slot: only
// then does a standby show itself. One that merely avoids the free slots
// (reserved too far past its clock, refused, damaged) could take nothing
// that holders shortening their reservations would free.
func (s *leaseLoop) everyHeld(names []string) bool {
	held := zklayout.Holders(names)
	for _, sl := range s.candidates() {
		if _, ok := held[sl]; !ok {
			return false
		}
	}
	return true
}

// createLease creates the protected ephemeral sequential node of slot and
// confirms that our current session owns it.
func (s *leaseLoop) createLease(ctx context.Context, slot snowflake.Slot) (*wonLease, error) {
	c := s.c
	guid := tree.NewGUID()
	prefix := zklayout.LeasesPath(c.cfg.Root) + "/" + tree.ProtectedPrefix + guid + "-" + slot.String() + "-"
	now := time.Now()
	holder := c.leaseData(now)
	data := zklayout.EncodeLease(holder)
	c.creates.Add(1)
	sendMs := c.nowMs()
	created, err := s.createProtected(ctx, prefix, guid, data, c.nodeACL)
	recvMs := c.nowMs()
	if err != nil {
		return nil, fmt.Errorf("create lease node for %s: %w", slot, err)
	}
	st, err := s.confirmOwned(ctx, created, guid)
	if err != nil {
		return nil, err
	}
	// The leader stamped the node's ctime within our create: the skew is
	// known before the claim's first reservation.
	c.observeSkew(st.Ctime, sendMs, recvMs)
	name := created[strings.LastIndex(created, "/")+1:]
	if _, _, err := zklayout.ParseLeaseName(name); err != nil {
		s.deletePath(ctx, created)
		return nil, err
	}
	return &wonLease{slot: slot, name: name, path: created, guid: guid, session: st.EphemeralOwner, holder: holder}, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}
