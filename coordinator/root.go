package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/snowflake"
)

// rootFillWait is how long a worker that finds a v1 root written moments
// ago waits for the worker that made it to finish making the slot nodes,
// before it makes the missing ones itself.
const rootFillWait = 30 * time.Second

// ensureRoot makes the root with its whole tree if the root does not exist,
// upgrades a v1 root, and refuses a root made for another layout or one
// whose leases/ or slots/ is missing (it never re-creates those: that is
// snowflakectl repair's). Transient errors and damage are retried until ctx
// ends.
func (s *session) ensureRoot(ctx context.Context) error {
	for {
		err := s.tryEnsureRoot(ctx)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrLayoutMismatch) || errors.Is(err, ErrFleetOverlap) || errors.Is(err, ErrOutsideFleet) ||
			errors.Is(err, ErrScanLimit) || errors.Is(err, zk.ErrNoAuth) ||
			errors.Is(err, zk.ErrAuthFailed) || errors.Is(err, zk.ErrInvalidACL) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := 500 * time.Millisecond
		if errors.Is(err, ErrDamaged) {
			s.c.treeMissing(err)
			wait = damagedRecheck
		} else {
			s.c.log.Warn("cannot prepare the root znode; retrying", "root", s.c.cfg.Root, "error", err)
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

func (s *session) tryEnsureRoot(ctx context.Context) error {
	root := s.c.cfg.Root
	made, err := s.makeRootIfAbsent(ctx)
	if err != nil {
		return err
	}
	var (
		data []byte
		st   *zk.Stat
	)
	if err := s.c.call(ctx, 0, func() (err error) { data, st, err = s.conn.Get(root); return }); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("%w: root %s vanished while being prepared", ErrDamaged, root)
		}
		return fmt.Errorf("read root %s: %w", root, err)
	}
	var info RootInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return fmt.Errorf("%w: root %s holds no layout JSON (%v)", ErrLayoutMismatch, root, err)
	}
	if err := info.Compatible(); err != nil {
		return fmt.Errorf("root %s: %w", root, err)
	}
	if err := s.checkScope(ctx, info); err != nil {
		return err
	}
	if err := s.checkTree(ctx); err != nil {
		return err
	}
	if info.filling() {
		return s.upgradeRoot(ctx, info, st, made)
	}
	return nil
}

// makeRootIfAbsent makes the root (as LayoutV1: its slot nodes are made
// next) and its two children in one Multi when the root does not exist, or
// when it exists without data and children (an operator made it to set its
// ACL first). made reports that this call made it: nothing was ever issued
// under it.
func (s *session) makeRootIfAbsent(ctx context.Context) (made bool, err error) {
	root := s.c.cfg.Root
	var (
		data []byte
		st   *zk.Stat
	)
	err = s.c.call(ctx, 0, func() (err error) { data, st, err = s.conn.Get(root); return })
	exists := err == nil
	switch {
	case errors.Is(err, zk.ErrNoNode):
		if err := s.checkNoFleets(ctx); err != nil {
			return false, err
		}
		parts := strings.Split(strings.Trim(root, "/"), "/")
		for i := 1; i < len(parts); i++ {
			if err := s.create(ctx, "/"+strings.Join(parts[:i], "/"), nil); err != nil {
				return false, err
			}
		}
	case err != nil:
		return false, fmt.Errorf("read root %s: %w", root, err)
	case len(strings.TrimSpace(string(data))) > 0:
		return false, nil
	case st.NumChildren > 0:
		return false, fmt.Errorf("%w: root %s has children but no layout JSON: not made by snowfleet", ErrLayoutMismatch, root)
	default:
		if err := s.checkNoFleets(ctx); err != nil {
			return false, err
		}
	}
	info := encodeRoot(rootInfo(LayoutV1, time.Now()))
	var first any = &zk.CreateRequest{Path: root, Data: info, Acl: s.c.acl}
	if exists {
		first = &zk.SetDataRequest{Path: root, Data: info, Version: st.Version}
	}
	err = s.c.call(ctx, 0, func() error {
		_, err := s.conn.Multi(first, &zk.CreateRequest{Path: LeasesPath(root), Acl: s.c.acl},
			&zk.CreateRequest{Path: SlotsPath(root), Acl: s.c.acl})
		return err
	})
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) {
		return false, nil // another worker made it meanwhile
	}
	if err != nil {
		return false, fmt.Errorf("create root %s: %w", root, err)
	}
	s.c.log.Info("created the root znode", "root", root)
	return true, nil
}

// checkTree returns ErrDamaged naming the first of the root, leases/ and
// slots/ that is missing.
func (s *session) checkTree(ctx context.Context) error {
	root := s.c.cfg.Root
	for i, p := range []string{root, LeasesPath(root), SlotsPath(root)} {
		var ok bool
		if err := s.c.call(ctx, 0, func() (err error) { ok, _, err = s.conn.Exists(p); return }); err != nil {
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
	return fmt.Sprintf("%v: %s is missing; workers do not re-create it (snowflakectl repair)", ErrDamaged, d.path)
}

func (d *damage) Unwrap() error { return ErrDamaged }

// damagedRecheck is how often a worker that found the tree damaged looks
// again (an operator may have repaired it).
const damagedRecheck = 5 * time.Second

// missingSlotAvoid is how long a slot whose node is missing is left alone
// before it is looked at again.
const missingSlotAvoid = time.Minute

// treeMissing reports a missing node (a *damage in err): an error log and
// the missing_znodes metric, for an alert.
func (c *Coordinator) treeMissing(err error) {
	var d *damage
	if !errors.As(err, &d) {
		c.log.Error("znode tree damaged; not serving", "root", c.cfg.Root, "error", err)
		return
	}
	c.m.missing.WithLabelValues(d.kind).Inc()
	c.log.Error("znode missing: not serving from it, and not re-creating it", "znode", d.path,
		"fix", "snowflakectl repair (see cmd/snowflakectl/README.md)")
}

// slotMissing refuses a slot whose node is missing: its history is lost,
// and a holder starting at floor 0 could repeat IDs. The slot is avoided
// for missingSlotAvoid, then looked at again.
func (s *session) slotMissing(l *lease) {
	if s.avoid == nil {
		s.avoid = map[snowflake.Slot]time.Time{}
	}
	s.avoid[l.slot] = time.Now().Add(missingSlotAvoid)
	s.c.treeMissing(&damage{kind: "slot", path: SlotPath(s.c.cfg.Root, l.slot)})
}

// upgradeRoot makes every missing slot node of a v1 root, then sets its
// layout to v2 (compare-and-set on the version read). A root made by this
// call has no history: its nodes are reserved to our clock. In a v1 root
// found here a missing node means "never used" or "deleted by hand", which
// cannot be told apart: it is reserved Horizon past our clock, above what
// a holder of the deleted node could have reserved at its last renew (with
// clocks within MaxSkew). A root made moments ago by another worker is
// left to it for up to rootFillWait, so a fleet started at once does not
// wait out a horizon.
func (s *session) upgradeRoot(ctx context.Context, info RootInfo, st *zk.Stat, made bool) error {
	c, root := s.c, s.c.cfg.Root
	now := c.nowMs()
	wait := rootFillWait
	if c.cfg.fillWait > 0 {
		wait = c.cfg.fillWait
	}
	if !made && abs(now-st.Mtime) < wait.Milliseconds() {
		if v2, err := s.waitLayout(ctx, st.Mtime+wait.Milliseconds()); v2 || err != nil {
			return err
		}
		if err := s.c.call(ctx, 0, func() (err error) { _, st, err = s.conn.Get(root); return }); err != nil {
			return fmt.Errorf("read root %s: %w", root, err)
		}
		now = c.nowMs()
	}
	// A root just made: nothing was issued under it, but a root deleted by
	// hand and made again may have been; reserving to ZooKeeper's time of
	// the make (not our clock, which may run ahead) keeps new IDs above
	// any it saw without making everyone wait out our skew.
	reserve := st.Mtime
	if !made {
		reserve = c.reservedUntil(now, 0)
	}
	var created int
	err := c.call(ctx, fillTimeout, func() (err error) {
		created, err = createSlotNodes(s.conn, root, c.acl, nil, SlotRecord{ReservedUntilMs: reserve, UpdatedMs: now})
		return err
	})
	if err != nil {
		return fmt.Errorf("make the slot nodes of root %s: %w", root, err)
	}
	info.Layout = info.finished()
	err = c.call(ctx, 0, func() error { _, err := s.conn.Set(root, encodeRoot(info), st.Version); return err })
	if errors.Is(err, zk.ErrBadVersion) {
		return fmt.Errorf("root %s changed while upgrading it; reading again", root)
	}
	if err != nil {
		return fmt.Errorf("write layout %s into root %s: %w", info.Layout, root, err)
	}
	c.log.Info("root has every slot node", "root", root, "layout", info.Layout, "made", created,
		"reserved_until", time.UnixMilli(reserve).UTC(), "new_root", made)
	return nil
}

// waitLayout polls the root until it names Layout (true) or until the
// leader's clock would pass untilMs by ours.
func (s *session) waitLayout(ctx context.Context, untilMs int64) (bool, error) {
	root := s.c.cfg.Root
	for s.c.nowMs() < untilMs {
		if !sleep(ctx, 200*time.Millisecond) {
			return false, ctx.Err()
		}
		var data []byte
		if err := s.c.call(ctx, 0, func() (err error) { data, _, err = s.conn.Get(root); return }); err != nil {
			return false, fmt.Errorf("read root %s: %w", root, err)
		}
		var info RootInfo
		if json.Unmarshal(data, &info) == nil && !info.filling() && info.Compatible() == nil {
			return true, nil
		}
	}
	return false, nil
}

// create makes a persistent node; one that exists already is fine.
func (s *session) create(ctx context.Context, p string, data []byte) error {
	err := s.c.call(ctx, 0, func() error { _, err := s.conn.Create(p, data, 0, s.c.acl); return err })
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return nil
}
