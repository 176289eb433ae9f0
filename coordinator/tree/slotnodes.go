package tree

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// slotBatch is how many slot node creates go into one Multi: 1,024 nodes of
// about 250 bytes make 8 Multis of about 32 KB, far below ZooKeeper's
// jute.maxbuffer (1 MB), and each Multi is one transaction.
const slotBatch = 128

// fillTimeout bounds making every slot node of a root (8 Multis, and a
// re-listing when another process made some meanwhile).
const fillTimeout = 30 * time.Second

// CreateSlotNodes makes, with rec as their record, the slot nodes of want
// (every slot when want is nil) that are missing under root's slots/, in
// batched Multis; a batch that fails because another process made one of
// its nodes meanwhile is worked out again from a new listing. It never
// writes a node that exists. It returns how many it made.
func CreateSlotNodes(conn *zk.Conn, root string, acl []zk.ACL, want []snowflake.Slot, rec SlotRecord) (int, error) {
	if want == nil {
		for i := 0; i < snowflake.Slots; i++ {
			want = append(want, snowflake.SlotAt(i))
		}
	}
	data := EncodeSlot(rec)
	made := 0
	for round := 0; ; round++ {
		have, err := slotNames(conn, root)
		if err != nil {
			return made, err
		}
		var ops []any
		for _, s := range want {
			if !have[s.String()] {
				ops = append(ops, &zk.CreateRequest{Path: zklayout.SlotPath(root, s), Data: data, Acl: acl})
			}
		}
		if len(ops) == 0 {
			return made, nil
		}
		if round >= 5 {
			return made, fmt.Errorf("slot nodes under %s keep appearing while being made; %d still missing", zklayout.SlotsPath(root), len(ops))
		}
		for i := 0; i < len(ops); i += slotBatch {
			batch := ops[i:min(i+slotBatch, len(ops))]
			_, err := conn.Multi(batch...)
			if errors.Is(err, zk.ErrNodeExists) {
				break // list again
			}
			if err != nil {
				return made, fmt.Errorf("create slot nodes under %s: %w", zklayout.SlotsPath(root), err)
			}
			made += len(batch)
		}
	}
}

// slotNames is the set of node names under root's slots/.
func slotNames(conn *zk.Conn, root string) (map[string]bool, error) {
	names, _, err := conn.Children(zklayout.SlotsPath(root))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", zklayout.SlotsPath(root), err)
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	return have, nil
}

// RepairResult is what RepairSlots did for each slot it was asked about.
type RepairResult struct {
	// Made are the slot nodes it re-created, Existing those it found and
	// left as they were, Reset the damaged ones it rewrote (Reset).
	Made, Existing, Reset []snowflake.Slot
	// MadeTree names the nodes of the tree it re-created (the root,
	// leases/, slots/).
	MadeTree []string
	// ReservedUntilMs is the reservation the made nodes got.
	ReservedUntilMs int64
	// Owned are the datacenters of the root (kept, or given for a root
	// made again).
	Owned DCSet
	// MaxHorizon and MaxSkew are the root's bound (kept, or given for a
	// root made again): the reservation is counted from them.
	MaxHorizon, MaxSkew time.Duration
}

// ErrReservationTooLow: a repair's reservation is below what a holder of
// the slot may have issued (now plus the root's bound on the horizon).
var ErrReservationTooLow = errors.New("reservation below what a holder may have issued")

// RepairConfig is what RepairSlots re-creates.
type RepairConfig struct {
	// Root is the fleet's root znode.
	Root string
	// ACL is the fleet's ACL scheme every node made is given (zero:
	// world-open); see FleetACLFromTree for the tree's own.
	ACL FleetACL
	// Slots are the slot nodes to re-create where missing.
	Slots []snowflake.Slot
	// ReservedUntilMs is the reservation of the nodes made; 0 means now plus
	// the root's reach (its bound on the horizon and skew), the lowest that
	// is safe whatever the old holder did.
	ReservedUntilMs int64
	// AllowLow lets ReservedUntilMs be below now plus the root's reach: the
	// operator knows no holder issued that far (it can repeat IDs).
	AllowLow bool
	// Owned are the datacenters a root made again owns; required when the
	// root is missing (0 refuses to make it), and when given for a root
	// that exists it must be the root's own (ranges never change in place).
	Owned DCSet
	// MaxHorizon and MaxSkew are the bound a root made again records, as
	// init's: required when the root is missing, since the default (40 s +
	// 1 s) reserved the slots only that far past now, below what a holder
	// of a fleet made with a longer bound may have reserved. For a root
	// that exists, 0 or the root's own (a bound never changes in place).
	MaxHorizon, MaxSkew time.Duration
	// Reset rewrites, by compare-and-set, each node of Slots that exists
	// but is damaged (it holds no slot record, or a Forged one) with the
	// reservation. A valid node is never written: repair never lowers a
	// reservation a holder may have confirmed.
	Reset bool
}

// RepairSlots deliberately re-creates what an operator (or an accident)
// deleted: the root (owning cfg.Owned, after the same look at the fleet
// registry as init, before and after, and registered), leases/ and slots/ if missing, and each missing slot
// node of cfg.Slots with the reservation, so that the next holder issues
// only timestamps above it. A slot node that exists is never written. It is
// snowflakectl repair; workers never call it.
func RepairSlots(ctx context.Context, conn *zk.Conn, cfg RepairConfig) (RepairResult, error) {
	if !zklayout.ValidRoot(cfg.Root) {
		return RepairResult{}, fmt.Errorf("repair: root %q is not an absolute znode path", cfg.Root)
	}
	if cfg.ReservedUntilMs != 0 && (cfg.ReservedUntilMs < snowflake.MinUnixMs || cfg.ReservedUntilMs > snowflake.MaxUnixMs) {
		return RepairResult{}, fmt.Errorf("repair: reservation %d ms is outside the ID's range %d..%d", cfg.ReservedUntilMs, snowflake.MinUnixMs, snowflake.MaxUnixMs)
	}
	return zkconn.CallResult(ctx, "repair", func(res *RepairResult) error { return repair(conn, cfg, res) })
}

func repair(conn *zk.Conn, cfg RepairConfig, res *RepairResult) error {
	root := cfg.Root
	data, _, err := conn.Get(root)
	newRoot := errors.Is(err, zk.ErrNoNode)
	if err != nil && !newRoot {
		return fmt.Errorf("repair: read root %s: %w", root, err)
	}
	info := NewRootInfo(LayoutFilling, time.Now())
	if !newRoot {
		if info, err = DecodeRoot(root, data); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
		have, _ := info.Owned()
		if cfg.Owned != 0 && cfg.Owned != have {
			return fmt.Errorf("repair: %w: root %s owns datacenters %s, not %s; ranges are not changed in place", ErrRootExists, root, have, cfg.Owned)
		}
		if (cfg.MaxHorizon != 0 && cfg.MaxHorizon != info.MaxHorizon()) || (cfg.MaxSkew != 0 && cfg.MaxSkew != info.MaxSkew()) {
			return fmt.Errorf("repair: %w: root %s records the bound max horizon %v, max skew %v, not %v, %v; a bound is not changed in place",
				ErrRootExists, root, info.MaxHorizon(), info.MaxSkew(), cfg.MaxHorizon, cfg.MaxSkew)
		}
		res.Owned = have
	} else {
		if len(cfg.Slots) != snowflake.Slots {
			return fmt.Errorf("repair: %w: root %s is missing; re-create it with every slot (--slot all)", ErrDamaged, root)
		}
		// The registry outlives the root: it says what the root owned and
		// the bound it recorded, when the operator does not.
		reg, err := ReadRegistry(conn, cfg.ACL.Insecure())
		if err != nil {
			return fmt.Errorf("repair: %w", err)
		}
		var entry *FleetRoot
		for i := range reg.Fleets {
			if reg.Fleets[i].Root == root && reg.Fleets[i].Err == nil {
				entry = &reg.Fleets[i]
			}
		}
		if cfg.Owned == 0 && entry != nil {
			cfg.Owned = entry.Owned
		}
		if cfg.Owned == 0 {
			return fmt.Errorf("repair: %w: root %s is missing, and the fleet registry has no entry for it; re-making it needs the datacenters it owned (--datacenters RANGES, or all): a root owning others would claim another fleet's slots", ErrDamaged, root)
		}
		if entry != nil && cfg.Owned != entry.Owned {
			return fmt.Errorf("repair: %w: root %s owned datacenters %s (its registry entry), not %s; ranges are not changed in place", ErrRootExists, root, entry.Owned, cfg.Owned)
		}
		info.Datacenters, res.Owned = cfg.Owned.String(), cfg.Owned
		if entry != nil && entry.MaxHorizon > 0 {
			if cfg.MaxHorizon == 0 && cfg.MaxSkew == 0 {
				cfg.MaxHorizon, cfg.MaxSkew = entry.MaxHorizon, entry.MaxSkew
			}
			if cfg.MaxHorizon+cfg.MaxSkew < entry.MaxHorizon+entry.MaxSkew {
				return fmt.Errorf("repair: %w: root %s recorded the bound max horizon %v, max skew %v (its registry entry); --max-horizon %v and --max-skew %v are below it: a holder may have reserved that far past its clock",
					ErrDamaged, root, entry.MaxHorizon, entry.MaxSkew, cfg.MaxHorizon, cfg.MaxSkew)
			}
		}
		if cfg.MaxHorizon <= 0 || cfg.MaxSkew <= 0 {
			return fmt.Errorf("repair: %w: root %s is missing, and its registry entry records no bound; re-making it needs the bound it recorded (--max-horizon and --max-skew, as given to init: %v and %v by default): the slots are reserved that far past now, and a default below the fleet's would let a successor repeat a holder's IDs",
				ErrDamaged, root, DefaultMaxHorizon, DefaultMaxSkew)
		}
		ic := InitConfig{Root: root, Owned: cfg.Owned, MaxHorizon: cfg.MaxHorizon, MaxSkew: cfg.MaxSkew}
		if err := ic.Validate(); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
		info.MaxHorizonMs, info.MaxSkewMs = cfg.MaxHorizon.Milliseconds(), cfg.MaxSkew.Milliseconds()
		if err := CheckScope(root, cfg.Owned, reg); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
		// Registered before the root is made, as init does.
		if err := Register(conn, cfg.ACL, root, info.Finished()); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
	}
	res.MaxHorizon, res.MaxSkew = info.MaxHorizon(), info.MaxSkew()
	now := time.Now().UnixMilli()
	least := now + info.Reach().Milliseconds()
	until := cfg.ReservedUntilMs
	if until == 0 {
		until = least
	}
	if until < least && !cfg.AllowLow {
		return fmt.Errorf("repair: %w: %s is below now + the root's bound (max horizon %v + max skew %v = %s): a holder may have issued IDs up to then; give a later --reserve-until, or --unsafe-low-reservation if you know no holder did",
			ErrReservationTooLow, time.UnixMilli(until).UTC().Format(time.RFC3339Nano), info.MaxHorizon(), info.MaxSkew(), time.UnixMilli(least).UTC().Format(time.RFC3339Nano))
	}
	res.ReservedUntilMs = until
	if newRoot {
		if _, err := conn.Create(root, EncodeRoot(info), 0, cfg.ACL.Root()); err != nil {
			return fmt.Errorf("repair: create root %s: %w", root, err)
		}
		res.MadeTree = append(res.MadeTree, root)
	}
	for _, p := range []string{zklayout.LeasesPath(root), zklayout.SlotsPath(root), StandbyPath(root)} {
		_, err := conn.Create(p, nil, 0, cfg.ACL.For(root, p))
		if err == nil {
			res.MadeTree = append(res.MadeTree, p)
		} else if !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("repair: create %s: %w", p, err)
		}
	}
	zt, err := zkTime(conn, root)
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	if zkLeast := zt + info.Reach().Milliseconds(); zkLeast > least {
		least = zkLeast
		if cfg.ReservedUntilMs == 0 {
			until = least
		}
		if until < least && !cfg.AllowLow {
			return fmt.Errorf("repair: %w: %s is below ZooKeeper's time + the root's bound (max horizon %v + max skew %v = %s); give a later --reserve-until, or --unsafe-low-reservation",
				ErrReservationTooLow, time.UnixMilli(until).UTC().Format(time.RFC3339Nano), info.MaxHorizon(), info.MaxSkew(), time.UnixMilli(least).UTC().Format(time.RFC3339Nano))
		}
		res.ReservedUntilMs = until
	}
	have, err := slotNames(conn, root)
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	var missing []snowflake.Slot
	for _, s := range cfg.Slots {
		switch {
		case !have[s.String()]:
			missing = append(missing, s)
		case cfg.Reset:
			reset, err := resetDamaged(conn, zklayout.SlotPath(root, s), info.Reach(), SlotRecord{ReservedUntilMs: until, UpdatedMs: now, BoundMs: info.Reach().Milliseconds()})
			if err != nil {
				return fmt.Errorf("repair: %w", err)
			}
			if reset {
				res.Reset = append(res.Reset, s)
			} else {
				res.Existing = append(res.Existing, s)
			}
		default:
			res.Existing = append(res.Existing, s)
		}
	}
	if len(missing) > 0 {
		if _, err := CreateSlotNodes(conn, root, cfg.ACL.Slot(), missing, SlotRecord{ReservedUntilMs: until, UpdatedMs: now, BoundMs: info.Reach().Milliseconds()}); err != nil {
			return fmt.Errorf("repair: %w", err)
		}
		res.Made = missing
	}
	if !newRoot {
		return nil
	}
	if _, err := conn.Set(root, EncodeRoot(info.Finished()), 0); err != nil {
		return fmt.Errorf("repair: write layout into root %s: %w", root, err)
	}
	again, err := ReadRegistry(conn, cfg.ACL.Insecure())
	if err != nil {
		return fmt.Errorf("repair: made root %s, but the check after: %w", root, err)
	}
	if err := CheckScope(root, cfg.Owned, again); err != nil {
		return fmt.Errorf("repair: made root %s, but another fleet appeared meanwhile: %w", root, err)
	}
	return nil
}

// resetDamaged writes rec into the slot node at p, by compare-and-set, when
// it holds no slot record or a Forged one (reach: the root's bound);
// reset is false for a valid node, which is left alone.
func resetDamaged(conn *zk.Conn, p string, reach time.Duration, rec SlotRecord) (reset bool, err error) {
	data, st, err := conn.Get(p)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", p, err)
	}
	have, derr := DecodeSlot(data)
	have.MtimeMs = st.Mtime
	if derr == nil && !Forged(have, reach) {
		return false, nil
	}
	if _, err := conn.Set(p, EncodeSlot(rec), st.Version); err != nil {
		return false, fmt.Errorf("reset %s: %w", p, err)
	}
	return true, nil
}
