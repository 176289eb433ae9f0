package tree

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// SlotRecord is the JSON of a slot node: the slot's timeline.
type SlotRecord struct {
	// ReservedUntilMs is the highest Unix ms timestamp the holder may issue;
	// the next holder starts strictly above it.
	ReservedUntilMs int64
	// LastMs is the last timestamp the holder had issued at its last write.
	LastMs int64
	// Holder is the lease node name of the holder that wrote it last.
	Holder string
	// UpdatedMs is the holder's clock at its last write.
	UpdatedMs int64
	// BoundMs is the root's bound (max horizon + max skew) in force when
	// the record was written, so that it survives the root: how far past
	// its writer's clock a reservation may reach. 0: written by a build
	// before it.
	BoundMs int64
	// History is the slot's tenures, written by the holders' fenced writes
	// (history.go); empty in a record from init, repair or an older build.
	History History
	// Version, MtimeMs and Czxid come from the node's Stat, not its JSON:
	// the version fences writes, the mtime is stamped by the ZooKeeper
	// leader, the czxid tells the node from one made again in its place.
	Version int32 `json:"-"`
	MtimeMs int64 `json:"-"`
	Czxid   int64 `json:"-"`
}

// MarshalJSON writes the record as it is stored in the slot node.
func (r SlotRecord) MarshalJSON() ([]byte, error) {
	return json.Marshal(r.data())
}

// BeyondBound reports a reservation reservedMs further past zkMs, a
// ZooKeeper time at or after its write, than reach (the root's bound) and
// a second: no holder, init or recover can have written it (each reserves
// at most the bound past its clock, which is within the skew bound of
// ZooKeeper's), so anyone who can write slot nodes did, and adopting it as
// a floor would freeze the slot until then. 0 for either time: unknown.
func BeyondBound(reservedMs, zkMs int64, reach time.Duration) bool {
	return reach > 0 && zkMs > 0 && reservedMs > zkMs+(reach+time.Second).Milliseconds()
}

// Forged is BeyondBound against the record's own write (MtimeMs).
func Forged(r SlotRecord, reach time.Duration) bool {
	return BeyondBound(r.ReservedUntilMs, r.MtimeMs, reach)
}

// SlotMap is the whole slot map: who holds what, and every slot's timeline.
type SlotMap struct {
	// Leases are the holding lease nodes (the lowest sequence of each slot),
	// sorted by slot.
	Leases []zklayout.LeaseInfo
	// Slots are the slot nodes: all 1,024 in layout v2 (Holder is empty in
	// one never held), those ever used in a v1 root; a slot missing here
	// is damage.
	Slots map[snowflake.Slot]SlotRecord
	// Damaged are the slot nodes that hold no slot record (overwritten by
	// hand?), or a forged one (Forged: reserved past ZooKeeper's time of
	// its write plus the root's bound), with why: workers avoid those slots
	// until an operator writes a valid record (snowflakectl repair
	// --reset). One such node does not hide the rest of the map.
	Damaged map[snowflake.Slot]string
	// Owned are the datacenters the root owns (all 32 for a v1 or v2
	// root, or when the root is missing): free slots are counted in them.
	Owned DCSet
	// Standbys are the workers waiting for a slot (nodes in standby/),
	// sorted by name: while one waits for a range, its holders reserve
	// only StandbyHorizon ahead.
	Standbys []StandbyInfo
}

// Free is how many of the slots the fleet owns no lease holds.
func (m SlotMap) Free() int {
	free := m.Owned.Slots()
	for _, l := range m.Leases {
		if m.Owned.Has(l.Slot.Datacenter) {
			free--
		}
	}
	return free
}

// ReadSlotMap reads the live leases and every slot node under root.
func ReadSlotMap(conn *zk.Conn, root string) (SlotMap, error) {
	leases, err := zklayout.ReadLeases(conn, root)
	if err != nil {
		return SlotMap{}, err
	}
	names, _, err := conn.Children(zklayout.SlotsPath(root))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return SlotMap{}, fmt.Errorf("list %s: %w", zklayout.SlotsPath(root), err)
	}
	standbys, err := readStandbys(conn, root)
	if err != nil {
		return SlotMap{}, err
	}
	m := SlotMap{Leases: leases, Slots: make(map[snowflake.Slot]SlotRecord, len(names)), Damaged: map[snowflake.Slot]string{}, Owned: AllDatacenters, Standbys: standbys}
	reach := DefaultMaxHorizon + DefaultMaxSkew
	if data, _, err := conn.Get(root); err == nil && len(data) > 0 {
		info, err := decodeRootJSON(root, data)
		if err != nil {
			return SlotMap{}, err
		}
		reach = info.Reach()
		if m.Owned, err = info.Owned(); err != nil {
			return SlotMap{}, fmt.Errorf("root %s: %w", root, err)
		}
	} else if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return SlotMap{}, fmt.Errorf("read root %s: %w", root, err)
	}
	var mu sync.Mutex
	err = zkconn.ForEach(names, func(name string) error {
		s, err := snowflake.ParseSlot(name)
		if err != nil {
			return nil // not ours; an operator's note, say
		}
		data, st, err := conn.Get(path.Join(zklayout.SlotsPath(root), name))
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read slot %s: %w", name, err)
		}
		rec, err := DecodeSlot(data)
		if err != nil {
			mu.Lock()
			m.Damaged[s] = err.Error()
			mu.Unlock()
			return nil
		}
		rec.Version, rec.MtimeMs, rec.Czxid = st.Version, st.Mtime, st.Czxid
		mu.Lock()
		if Forged(rec, reach) {
			m.Damaged[s] = fmt.Sprintf("reserved until %s, past ZooKeeper's time of its last write (%s) plus the root's bound (%v) and a second: no holder wrote it (snowflakectl repair --slot %s --reset)",
				time.UnixMilli(rec.ReservedUntilMs).UTC().Format(time.RFC3339), time.UnixMilli(rec.MtimeMs).UTC().Format(time.RFC3339), reach, s)
		} else {
			m.Slots[s] = rec
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return SlotMap{}, err
	}
	return m, nil
}
