package tree

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// ErrRootExists: InitRoot found the root made already, with other ranges.
var ErrRootExists = errors.New("root exists")

// ErrForeignNode: a node of the fleet's layout exists with an ACL other
// than the fleet's: init did not make it so (another client did, perhaps
// to rewrite the ranges later), and never adopts it.
var ErrForeignNode = errors.New("node exists with an ACL the fleet did not give it")

// InitConfig is what InitRoot makes.
type InitConfig struct {
	// Root is the fleet's root znode.
	Root string
	// ACL is the fleet's ACL scheme every node made is given (its zero
	// value: world-open, for --zk-insecure). A node that exists with
	// another ACL is never adopted (ErrForeignNode).
	ACL FleetACL
	// Owned are the datacenters the fleet owns (never empty).
	Owned DCSet
	// MaxHorizon and MaxSkew are the bound the root records on its
	// workers' Horizon and MaxSkew; workers above it are refused.
	MaxHorizon, MaxSkew time.Duration
	// NewFleet is the operator's statement that no worker has ever served
	// under this root on any ensemble: the slot nodes are reserved to
	// ZooKeeper's time of the make rather than MaxHorizon + MaxSkew past
	// it, so the first IDs come at once.
	NewFleet bool
}

// DefaultInitConfig: root /snowflake owning all 32 datacenters, the
// default bounds, not a new fleet.
func DefaultInitConfig() InitConfig {
	return InitConfig{Root: zklayout.DefaultRoot, Owned: AllDatacenters,
		MaxHorizon: DefaultMaxHorizon, MaxSkew: DefaultMaxSkew}
}

// Validate names the first field out of range.
func (c InitConfig) Validate() error {
	bad := func(field string, value any, reason string) error {
		return &configerr.Error{Field: field, Value: value, Reason: reason}
	}
	switch {
	case !zklayout.ValidRoot(c.Root):
		return bad("Root", c.Root, "is not an absolute znode path such as /snowflake (not /, no trailing /)")
	case c.Owned == 0:
		return bad("Owned", c.Owned.String(), "is empty: a fleet must own at least one datacenter")
	case InRegistry(c.Root):
		return bad("Root", c.Root, "is the fleet registry's path ("+RegistryPath+") or under it")
	case c.MaxHorizon <= 0 || c.MaxHorizon > 24*time.Hour:
		return bad("MaxHorizon", c.MaxHorizon, "is out of range (0, 24h]")
	case c.MaxSkew <= 0 || c.MaxSkew > 24*time.Hour:
		return bad("MaxSkew", c.MaxSkew, "is out of range (0, 24h]")
	}
	return nil
}

// InitResult is what InitRoot did.
type InitResult struct {
	// Made is false when the root existed already, finished, with the same
	// ranges.
	Made bool
	// Finished is true when the root existed half made (init stopped before
	// it had made every slot node) and this call finished it.
	Finished bool
	// Layout is the root's layout.
	Layout string
	// ReservedUntilMs is the reservation the slot nodes made were given:
	// the first IDs are above it.
	ReservedUntilMs int64
	// Registered is true when this call registered the root (a root made
	// now, or one an init before the registry made).
	Registered bool
	// Scan is the ensemble's fleet registry as read before registering.
	Scan Scan
}

// InitRoot makes a fleet's root owning cfg.Owned: the root (as
// LayoutFilling) and its two children in one Multi, then all 1,024 slot
// nodes, then the final layout, once its entry is in the fleet registry:
// it reads the registry and refuses a fleet there that overlaps
// (ErrFleetOverlap), registers the root, and reads the registry again, for
// an init racing it. It is the only maker of a root (snowflakectl init); workers never
// make one. A root that exists, finished, is registered when it is not.
//
// The slot nodes are reserved past anything an earlier incarnation of the
// root (on an ensemble that lost its data, say) could still issue: to
// ZooKeeper's time of the make plus cfg.MaxHorizon + cfg.MaxSkew, unless
// cfg.NewFleet. A root that exists finished with the same ranges is left
// alone (Made false); with others it is ErrRootExists; one left filling is
// finished.
func InitRoot(ctx context.Context, conn *zk.Conn, cfg InitConfig) (InitResult, error) {
	if err := cfg.Validate(); err != nil {
		return InitResult{}, fmt.Errorf("init: %w", err)
	}
	return zkconn.CallResult(ctx, "init", func(res *InitResult) (err error) { *res, err = initRoot(conn, cfg); return })
}

// initRoot is tryInitRoot, run again when another init made the root or
// finished it meanwhile (two inits racing): the second then finds it made.
func initRoot(conn *zk.Conn, cfg InitConfig) (InitResult, error) {
	for attempt := 0; ; attempt++ {
		res, err := tryInitRoot(conn, cfg)
		if attempt < 3 && (errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion)) {
			continue
		}
		return res, err
	}
}

func tryInitRoot(conn *zk.Conn, cfg InitConfig) (InitResult, error) {
	var res InitResult
	root := cfg.Root
	data, st, err := conn.Get(root)
	exists := err == nil
	if exists {
		if err := checkOwnACLs(conn, cfg.ACL, root, root); err != nil {
			return res, fmt.Errorf("init: %w", err)
		}
	}
	switch {
	case err == nil && len(strings.TrimSpace(string(data))) > 0:
		info, err := DecodeRoot(root, data)
		if err != nil {
			return res, fmt.Errorf("init: %w", err)
		}
		have, _ := info.Owned()
		res.Layout = info.Layout
		if have != cfg.Owned {
			return res, fmt.Errorf("init: %w: root %s owns datacenters %s, not %s; ranges are not changed in place", ErrRootExists, root, have, cfg.Owned)
		}
		if !info.Filling() {
			return res, register(conn, cfg, info, &res)
		}
		res.Finished = true
		if err := register(conn, cfg, info.Finished(), &res); err != nil {
			return res, err
		}
		return res, fillRoot(conn, cfg, info, st, &res)
	case err != nil && !errors.Is(err, zk.ErrNoNode):
		return res, fmt.Errorf("init: read root %s: %w", root, err)
	case exists && st.NumChildren > 0:
		return res, fmt.Errorf("init: %w: root %s has children but no layout JSON: not made by snowfleet", ErrLayoutMismatch, root)
	}
	info := NewRootInfo(LayoutFilling, time.Now())
	info.Datacenters = cfg.Owned.String()
	info.MaxHorizonMs, info.MaxSkewMs = cfg.MaxHorizon.Milliseconds(), cfg.MaxSkew.Milliseconds()
	// Registered before the root is made: a worker never sees a finished
	// root that is not registered yet.
	if err := register(conn, cfg, info.Finished(), &res); err != nil {
		return res, err
	}
	parts := strings.Split(strings.Trim(root, "/"), "/")
	for i := 1; i < len(parts); i++ {
		if _, err := conn.Create("/"+strings.Join(parts[:i], "/"), nil, 0, cfg.ACL.Root()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return res, fmt.Errorf("init: create %s: %w", "/"+strings.Join(parts[:i], "/"), err)
		}
	}
	var first any = &zk.CreateRequest{Path: root, Data: EncodeRoot(info), Acl: cfg.ACL.Root()}
	if exists { // an empty root with the fleet's ACL (made to set it first) counts as absent
		first = &zk.SetDataRequest{Path: root, Data: EncodeRoot(info), Version: st.Version}
	}
	if _, err := conn.Multi(first, &zk.CreateRequest{Path: zklayout.LeasesPath(root), Acl: cfg.ACL.Parent()},
		&zk.CreateRequest{Path: zklayout.SlotsPath(root), Acl: cfg.ACL.Root()},
		&zk.CreateRequest{Path: StandbyPath(root), Acl: cfg.ACL.Parent()}); err != nil {
		return res, fmt.Errorf("init: create root %s: %w", root, err)
	}
	if _, st, err = conn.Get(root); err != nil {
		return res, fmt.Errorf("init: read root %s after making it: %w", root, err)
	}
	return res, fillRoot(conn, cfg, info, st, &res)
}

// register enters the root in the fleet registry unless it is there, after
// checking the registry for an overlapping fleet; then reads it again: two
// inits racing in one ensemble both pass the first look, and the second
// finds the pair (and their workers refuse to start).
func register(conn *zk.Conn, cfg InitConfig, info RootInfo, res *InitResult) error {
	root := cfg.Root
	reg, err := ReadRegistry(conn, cfg.ACL.Insecure())
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	res.Scan = reg
	if err := CheckScope(root, cfg.Owned, reg); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if CheckRegistered(root, cfg.Owned, reg) == nil && registeredBound(root, reg) == info.Reach() {
		return nil
	}
	if err := Register(conn, cfg.ACL, root, info); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	res.Registered = true
	again, err := ReadRegistry(conn, cfg.ACL.Insecure())
	if err != nil {
		return fmt.Errorf("init: registered root %s, but the check after: %w", root, err)
	}
	if err := CheckScope(root, cfg.Owned, again); err != nil {
		return fmt.Errorf("init: registered root %s, but another fleet appeared meanwhile: %w", root, err)
	}
	return nil
}

// fillRoot makes the missing slot nodes of a filling root whose Stat is st,
// then writes its final layout. The reservation is the root's mtime (the
// leader's time of the make: the clock of this process may run ahead or
// behind) plus the reach of the bound, unless cfg.NewFleet.
func fillRoot(conn *zk.Conn, cfg InitConfig, info RootInfo, st *zk.Stat, res *InitResult) error {
	root := cfg.Root
	reserve := st.Mtime
	if !cfg.NewFleet {
		reserve += info.Reach().Milliseconds()
	}
	now := time.Now().UnixMilli()
	if err := checkOwnACLs(conn, cfg.ACL, root, zklayout.LeasesPath(root), zklayout.SlotsPath(root), StandbyPath(root)); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	// A root an older init left filling has no standby/.
	if _, err := conn.Create(StandbyPath(root), nil, 0, cfg.ACL.Parent()); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("init: create %s: %w", StandbyPath(root), err)
	}
	if _, err := CreateSlotNodes(conn, root, cfg.ACL.Slot(), nil, SlotRecord{ReservedUntilMs: reserve, UpdatedMs: now, BoundMs: info.Reach().Milliseconds()}); err != nil {
		return fmt.Errorf("init: make the slot nodes of root %s: %w", root, err)
	}
	final := info.Finished()
	if _, err := conn.Set(root, EncodeRoot(final), st.Version); err != nil {
		return fmt.Errorf("init: write layout %s into root %s: %w", final.Layout, root, err)
	}
	res.Made, res.Layout, res.ReservedUntilMs = true, final.Layout, reserve
	return nil
}

// checkOwnACLs refuses (ErrForeignNode) any of paths under root that
// exists with an ACL other than the one the scheme gives it; a missing one
// passes.
func checkOwnACLs(conn *zk.Conn, scheme FleetACL, root string, paths ...string) error {
	for _, p := range paths {
		have, _, err := conn.GetACL(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read the ACL of %s: %w", p, err)
		}
		if want := scheme.For(root, p); !SameACL(have, want) {
			return fmt.Errorf("%w: %s has ACL %s, not the fleet's %s: something other than snowflakectl init with these credentials made it; it is not adopted (delete it, or, if it is this fleet's, snowflakectl secure)",
				ErrForeignNode, p, FormatACL(have), FormatACL(want))
		}
	}
	return nil
}

// SameACL compares two ACLs as sets of entries; a digest hash shown as x
// (a reader without admin) matches its user.
func SameACL(have, want []zk.ACL) bool {
	if len(have) != len(want) {
		return false
	}
	for _, w := range want {
		found := false
		for _, h := range have {
			if h.Perms == w.Perms && h.Scheme == w.Scheme && (h.ID == w.ID || w.Scheme == "digest" && sameID(h, w.ID)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
