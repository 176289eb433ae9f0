package tree

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// RecoverResult is what RecoverRoot did.
type RecoverResult struct {
	// ReservedUntilMs is the reservation every slot node now carries at
	// least: ZooKeeper's time of the recovery plus the root's reach.
	ReservedUntilMs int64
	// Raised are the slot nodes whose reservation was raised to it, Kept
	// those already above it.
	Raised, Kept int
	// Made are slot nodes that were missing and were made; Rewritten
	// those that did not decode (or held no reservation) and were written
	// with a fresh record.
	Made, Rewritten []snowflake.Slot
	// Owned are the datacenters of the root (kept as they are).
	Owned DCSet
	// Marker is the root's new recovery marker.
	Marker string
}

// RecoverRoot is snowflakectl recover, for an ensemble restored from a
// backup: the restored slot nodes carry the reservations of the backup's
// moment, while the holders of the moment of the restore still serve on
// later ceilings. It raises every slot node's reservation, by
// compare-and-set, to at least ZooKeeper's time at its start plus the
// root's reach (its bound on the horizon and skew): past anything the
// fleet could have issued since the backup. Missing and undecodable slot
// nodes are written with that reservation. Then, last, it writes a new
// recovery marker into the root, on the version it read at its start:
// workers that saw the ensemble go back in time claim again once the
// marker changes, so every slot must be raised before it does. A recover
// that stops part-way leaves no marker, and is run again. The root's
// datacenters and bound are kept. A holder whose lease survives finds its
// slot node changed, reads it, and adopts it when it still names it.
func RecoverRoot(ctx context.Context, conn *zk.Conn, root string, acl FleetACL) (RecoverResult, error) {
	if !zklayout.ValidRoot(root) {
		return RecoverResult{}, fmt.Errorf("recover: root %q is not an absolute znode path", root)
	}
	return zkconn.CallResult(ctx, "recover", func(res *RecoverResult) error { return recoverRoot(conn, root, acl, res) })
}

func recoverRoot(conn *zk.Conn, root string, acl FleetACL, res *RecoverResult) error {
	data, st, err := conn.Get(root)
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("recover: %w: root %s is missing: the ensemble lost its data rather than went back; run snowflakectl init", ErrDamaged, root)
	}
	if err != nil {
		return fmt.Errorf("recover: read root %s: %w", root, err)
	}
	info, err := DecodeRoot(root, data)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	if info.Filling() {
		return fmt.Errorf("recover: %w: root %s (run snowflakectl init to finish it)", ErrRootFilling, root)
	}
	res.Owned, _ = info.Owned()
	now := time.Now().UnixMilli()
	zt, err := zkTime(conn, root)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	// ZooKeeper's time, or ours if it runs ahead.
	until := max(zt, now) + info.Reach().Milliseconds()
	res.ReservedUntilMs = until
	have, err := slotNames(conn, root)
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	var missing []snowflake.Slot
	// The marker is chosen first, so that the spans recover records in the
	// slots' histories name it; it is written into the root last.
	marker := NewGUID() + "@" + time.Now().UTC().Format(time.RFC3339)
	for i := range snowflake.Slots {
		s := snowflake.SlotAt(i)
		if !have[s.String()] {
			missing = append(missing, s)
			continue
		}
		raised, rewritten, err := raiseSlot(conn, path.Join(zklayout.SlotsPath(root), s.String()), until, now, info.Reach().Milliseconds(), marker)
		if err != nil {
			return fmt.Errorf("recover: slot %s: %w", s, err)
		}
		switch {
		case rewritten:
			res.Rewritten = append(res.Rewritten, s)
		case raised:
			res.Raised++
		default:
			res.Kept++
		}
	}
	if len(missing) > 0 {
		if _, err := CreateSlotNodes(conn, root, acl.Slot(), missing, SlotRecord{ReservedUntilMs: until, UpdatedMs: now, BoundMs: info.Reach().Milliseconds()}); err != nil {
			return fmt.Errorf("recover: %w", err)
		}
		res.Made = missing
	}
	info.Recovery = marker
	if _, err := conn.Set(root, EncodeRoot(info), st.Version); err != nil {
		return fmt.Errorf("recover: every slot is raised, but the recovery marker could not be written into root %s (run recover again): %w", root, err)
	}
	res.Marker = info.Recovery
	return nil
}

// raiseSlot raises the reservation of the slot node at p to until by
// compare-and-set, reading again when a holder wrote it meanwhile. A node
// that does not decode is written with a fresh record (its holder, if any,
// loses the lease as it would on reading it).
// The span it raises over goes into the slot's history as lost to the
// restore (tree.LostToRestore), named by marker: tenures there were
// confirmed in ZooKeeper and taken away by the restore.
func raiseSlot(conn *zk.Conn, p string, until, now, boundMs int64, marker string) (raised, rewritten bool, err error) {
	for attempt := 0; ; attempt++ {
		data, st, err := conn.Get(p)
		if err != nil {
			return false, false, fmt.Errorf("read %s: %w", p, err)
		}
		rec, derr := DecodeSlot(data)
		if derr == nil && rec.ReservedUntilMs >= until {
			return false, false, nil
		}
		next := SlotRecord{ReservedUntilMs: until, UpdatedMs: now, BoundMs: boundMs}
		if derr == nil {
			next.LastMs, next.Holder = rec.LastMs, rec.Holder
			next.History = rec.History.With(Tenure{Lease: "recover:" + marker, Kind: LostToRestore, StartMs: now,
				FloorMs: rec.ReservedUntilMs, CeilingMs: until})
		}
		_, err = conn.Set(p, EncodeSlot(next), st.Version)
		if errors.Is(err, zk.ErrBadVersion) && attempt < 10 {
			continue // a holder renewed meanwhile: read it again
		}
		if err != nil {
			return false, false, fmt.Errorf("write %s: %w", p, err)
		}
		return derr == nil, derr != nil, nil
	}
}
