package coordinator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// ErrAboveRootBound: the worker's Horizon or MaxSkew exceeds the bound its
// root records. The reservation of a root made again (snowflakectl init on
// an ensemble that lost its data) covers only what a holder within that
// bound could have issued, so a worker beyond it is refused.
var ErrAboveRootBound = errors.New("above the bound the root records")

// runCheckingRoot is the checkingRoot state: checkRoot, then claiming;
// the first time in a session that follows one the ensemble refused, on
// the same root (its czxid and ctime), waitingRecover first: a root made
// again (rebuilt empty, then init) covers what we issued, the same root
// needs recover first. A root refused stops the loop.
func (s *leaseLoop) runCheckingRoot(ctx context.Context) leaseState {
	s.claimStart = time.Time{} // a claim begins afresh on the root read again
	if err := s.checkRoot(ctx); err != nil {
		return s.stop(err)
	}
	prev := s.inherited
	s.inherited = nil
	if prev != nil && s.rollback.czxid == prev.czxid && s.rollback.ctime == prev.ctime {
		s.rollback = *prev
		s.recover = recoverWait{why: "the ensemble refused our session: it has not seen the zxid we had", since: s.lastConfirmed()}
		return waitingRecover
	}
	return claiming
}

// checkRoot waits for the root to exist, made by snowflakectl init (a
// worker never makes it: a root made by a starting worker would reserve its
// slots to the make's time, below what a holder cut off from an ensemble
// that lost its data may still issue), then refuses a root made for another
// layout, one whose bound this worker's config exceeds, one not in the
// ensemble's fleet registry or whose fleet overlaps another registered
// there, or (with credentials) a tree the world may write
// (ErrUntrustedTree). Damage and transient errors are retried until ctx ends.
func (s *leaseLoop) checkRoot(ctx context.Context) error {
	for {
		err := s.tryCheckRoot(ctx)
		if err == nil {
			s.c.setWaiting(ReasonNoLease, 0)
			return nil
		}
		if errors.Is(err, tree.ErrLayoutMismatch) || errors.Is(err, tree.ErrFleetOverlap) || errors.Is(err, tree.ErrOutsideFleet) ||
			errors.Is(err, tree.ErrNotRegistered) || errors.Is(err, tree.ErrRegistryUntrusted) || errors.Is(err, ErrAboveRootBound) || errors.Is(err, tree.ErrUntrustedTree) || fatal(err) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := 500 * time.Millisecond
		switch {
		case errors.Is(err, tree.ErrDamaged):
			s.c.answered()
			s.c.setWaiting(ReasonRootMissing, 0)
			s.c.treeMissing(err)
			wait = damagedRecheck
		case errors.Is(err, tree.ErrRootFilling):
			s.c.answered()
			s.c.setWaiting(ReasonRootMissing, 0)
			s.c.log.Warn("root is not finished; waiting for snowflakectl init", "root", s.c.cfg.Root, "error", err)
			wait = damagedRecheck
		default:
			s.c.log.Warn("cannot read the root znode; retrying", "root", s.c.cfg.Root, "error", err)
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

func (s *leaseLoop) tryCheckRoot(ctx context.Context) error {
	root := s.c.cfg.Root
	var (
		data []byte
		st   *zk.Stat
	)
	err := s.call(ctx, 0, func() (err error) { data, st, err = s.conn.Get(root); return })
	if errors.Is(err, zk.ErrNoNode) {
		return &damage{kind: "root", path: root}
	}
	if err != nil {
		return fmt.Errorf("read root %s: %w", root, err)
	}
	info, err := tree.DecodeRoot(root, data)
	if err != nil {
		return err
	}
	if info.Filling() {
		return fmt.Errorf("%w: root %s (run snowflakectl init again to finish it)", tree.ErrRootFilling, root)
	}
	if err := s.c.cfg.withinBound(info); err != nil {
		return fmt.Errorf("root %s: %w", root, err)
	}
	// Trust first: a tree made without credentials is put right by
	// snowflakectl secure, registry and all, whatever else is wrong.
	if err := s.checkTrust(ctx); err != nil {
		return err
	}
	if err := s.checkScope(ctx, info); err != nil {
		return err
	}
	if err := s.checkTree(ctx); err != nil {
		return err
	}
	s.rollback.reset(st) // the root read afresh starts a new history
	s.reach = info.Reach()
	return nil
}

// withinBound refuses a Horizon or MaxSkew above the root's bound.
func (c Config) withinBound(info tree.RootInfo) error {
	if h := info.MaxHorizon(); c.Horizon > h {
		return fmt.Errorf("%w: horizon %v exceeds the root's max_horizon_ms %v; lower --horizon, or make the fleet with snowflakectl init --max-horizon", ErrAboveRootBound, c.Horizon, h)
	}
	if k := info.MaxSkew(); c.MaxSkew > k {
		return fmt.Errorf("%w: max skew %v exceeds the root's max_skew_ms %v; lower --max-skew, or make the fleet with snowflakectl init --max-skew", ErrAboveRootBound, c.MaxSkew, k)
	}
	return nil
}

// checkTree returns ErrDamaged naming the first of the root, leases/ and
// slots/ that is missing.
func (s *leaseLoop) checkTree(ctx context.Context) error {
	root := s.c.cfg.Root
	for i, p := range []string{root, zklayout.LeasesPath(root), zklayout.SlotsPath(root)} {
		var ok bool
		if err := s.call(ctx, 0, func() (err error) { ok, _, err = s.conn.Exists(p); return }); err != nil {
			return fmt.Errorf("check %s: %w", p, err)
		}
		if !ok {
			return &damage{kind: []string{"root", "leases", "slots"}[i], path: p}
		}
	}
	return nil
}

// damage is a node of the layout found missing: kind is root, leases, slots
// or slot (the label of the missing_znodes metric).
type damage struct{ kind, path string }

func (d *damage) Error() string {
	if d.kind == "root" {
		return fmt.Sprintf("%v: root %s is missing; workers never make it (a new fleet, or an ensemble that lost its data: snowflakectl init)", tree.ErrDamaged, d.path)
	}
	return fmt.Sprintf("%v: %s is missing; workers do not re-create it (snowflakectl repair)", tree.ErrDamaged, d.path)
}

func (d *damage) Unwrap() error { return tree.ErrDamaged }

// damagedRecheck is how often a worker that found the tree damaged looks
// again (an operator may have repaired it).
const damagedRecheck = 5 * time.Second

// treeMissing reports a missing node (a *damage in err): an error log and
// the missing_znodes metric, for an alert.
func (c *Coordinator) treeMissing(err error) {
	var d *damage
	if !errors.As(err, &d) {
		c.log.Error("znode tree damaged; not serving", "root", c.cfg.Root, "error", err)
		return
	}
	c.m.missing.WithLabelValues(d.kind).Inc()
	fix := "snowflakectl repair (see cmd/snowflakectl/README.md)"
	if d.kind == "root" {
		fix = "snowflakectl init (see deploy/runbook.md: ZooKeeper lost its data)"
	}
	c.log.Error("znode missing: not serving from it, and not re-creating it", "znode", d.path, "fix", fix)
}
