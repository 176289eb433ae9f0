package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/snowflake"
)

// slotBatch is how many slot node creates go into one Multi: 1,024 nodes of
// about 250 bytes make 8 Multis of about 32 KB, far below ZooKeeper's
// jute.maxbuffer (1 MB), and each Multi is one transaction.
const slotBatch = 128

// fillTimeout bounds making every slot node of a root (8 Multis, and a
// re-listing when another process made some meanwhile).
const fillTimeout = 30 * time.Second

// createSlotNodes makes, with rec as their record, the slot nodes of want
// (every slot when want is nil) that are missing under root's slots/, in
// batched Multis; a batch that fails because another process made one of
// its nodes meanwhile is worked out again from a new listing. It never
// writes a node that exists. It returns how many it made.
func createSlotNodes(conn *zk.Conn, root string, acl []zk.ACL, want []snowflake.Slot, rec SlotRecord) (int, error) {
	if want == nil {
		for i := 0; i < snowflake.Slots; i++ {
			want = append(want, snowflake.SlotAt(i))
		}
	}
	data := encodeSlot(rec)
	made := 0
	for round := 0; ; round++ {
		names, _, err := conn.Children(SlotsPath(root))
		if err != nil {
			return made, fmt.Errorf("list %s: %w", SlotsPath(root), err)
		}
		have := make(map[string]bool, len(names))
		for _, n := range names {
			have[n] = true
		}
		var ops []any
		for _, s := range want {
			if !have[s.String()] {
				ops = append(ops, &zk.CreateRequest{Path: SlotPath(root, s), Data: data, Acl: acl})
			}
		}
		if len(ops) == 0 {
			return made, nil
		}
		if round >= 5 {
			return made, fmt.Errorf("slot nodes under %s keep appearing while being made; %d still missing", SlotsPath(root), len(ops))
		}
		for i := 0; i < len(ops); i += slotBatch {
			batch := ops[i:min(i+slotBatch, len(ops))]
			_, err := conn.Multi(batch...)
			if errors.Is(err, zk.ErrNodeExists) {
				break // list again
			}
			if err != nil {
				return made, fmt.Errorf("create slot nodes under %s: %w", SlotsPath(root), err)
			}
			made += len(batch)
		}
	}
}

// RepairResult is what RepairSlots did for each slot it was asked about.
type RepairResult struct {
	// Made are the slot nodes it re-created, Existing those it found and
	// left as they were.
	Made, Existing []snowflake.Slot
	// MadeTree names the nodes of the tree it re-created (the root,
	// leases/, slots/).
	MadeTree []string
}

// RepairSlots deliberately re-creates what an operator (or an accident)
// deleted: the root, leases/ and slots/ if missing, and each missing slot
// node of slots with reservedUntilMs as its reservation, so that the next
// holder issues only timestamps above it. A slot node that exists is never
// written. A root it makes is written with the current layout once every
// slot node exists. It is snowflakectl repair; workers never call it.
func RepairSlots(ctx context.Context, conn *zk.Conn, root string, acl []zk.ACL, slots []snowflake.Slot, reservedUntilMs int64) (RepairResult, error) {
	var res RepairResult
	if !ValidRoot(root) {
		return res, fmt.Errorf("repair: root %q is not an absolute znode path", root)
	}
	if reservedUntilMs < snowflake.MinUnixMs {
		return res, fmt.Errorf("repair: reservation %d ms is before the ID epoch", reservedUntilMs)
	}
	done := make(chan error, 1)
	go func() { done <- repair(conn, root, acl, slots, reservedUntilMs, &res) }()
	select {
	case err := <-done:
		return res, err
	case <-ctx.Done():
		return RepairResult{}, fmt.Errorf("repair: %w", ctx.Err())
	}
}

func repair(conn *zk.Conn, root string, acl []zk.ACL, slots []snowflake.Slot, reservedUntilMs int64, res *RepairResult) error {
	data, _, err := conn.Get(root)
	newRoot := errors.Is(err, zk.ErrNoNode)
	if err != nil && !newRoot {
		return fmt.Errorf("repair: read root %s: %w", root, err)
	}
	if !newRoot {
		var info RootInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return fmt.Errorf("repair: %w: root %s holds no layout JSON (%v)", ErrLayoutMismatch, root, err)
		}
		if err := info.Compatible(); err != nil {
			return fmt.Errorf("repair: root %s: %w", root, err)
		}
	} else {
		if len(slots) != snowflake.Slots {
			return fmt.Errorf("repair: %w: root %s is missing; re-create it with every slot (--slot all)", ErrDamaged, root)
		}
		if _, err := conn.Create(root, encodeRoot(rootInfo(LayoutV1, time.Now())), 0, acl); err != nil {
			return fmt.Errorf("repair: create root %s: %w", root, err)
		}
		res.MadeTree = append(res.MadeTree, root)
	}
	for _, p := range []string{LeasesPath(root), SlotsPath(root)} {
		_, err := conn.Create(p, nil, 0, acl)
		if err == nil {
			res.MadeTree = append(res.MadeTree, p)
		} else if !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("repair: create %s: %w", p, err)
		}
	}
	names, _, err := conn.Children(SlotsPath(root))
	if err != nil {
		return fmt.Errorf("repair: list %s: %w", SlotsPath(root), err)
	}
	have := make(map[string]bool, len(names))
	for _, n := range names {
		have[n] = true
	}
	var missing []snowflake.Slot
	for _, s := range slots {
		if have[s.String()] {
			res.Existing = append(res.Existing, s)
		} else {
			missing = append(missing, s)
		}
	}
	now := time.Now().UnixMilli()
	if len(missing) == 0 {
		return nil
	}
	if _, err := createSlotNodes(conn, root, acl, missing, SlotRecord{ReservedUntilMs: reservedUntilMs, UpdatedMs: now}); err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	res.Made = missing
	if newRoot {
		info := encodeRoot(CurrentRootInfo(time.Now()))
		if _, err := conn.Set(root, info, 0); err != nil {
			return fmt.Errorf("repair: write layout into root %s: %w", root, err)
		}
	}
	return nil
}
