package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/snowflake"
)

// LeaseInfo is one live lease node: which worker holds which slot.
type LeaseInfo struct {
	// Node is the lease node's name in leases/ (no parent path).
	Node string
	// Slot is the slot the node claims.
	Slot snowflake.Slot
	// Seq is the node's sequence number (see ParseLeaseName); the oldest per
	// slot (LeaseSeqBefore) holds it.
	Seq int64
	// Addr is the worker's ID service (host:port), HTTP its admin address.
	Addr, HTTP string
	// Host and PID identify the worker process.
	Host string
	PID  int
	// Version is the worker's build.
	Version string
	// Since is when the worker created the node.
	Since time.Time
	// Kind is what holds the lease: KindWorker (it serves IDs at Addr) or
	// KindEmbedded (a program issuing IDs to itself: route nothing to it).
	Kind string
	// Program names the program holding the lease ("" when not given).
	Program string
}

// Serves reports whether the lease's holder serves ID requests: a worker
// with an address. Client discovery and balancer configs take only these.
func (l LeaseInfo) Serves() bool { return l.Kind == KindWorker && l.Addr != "" }

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
	// Version and MtimeMs come from the node's Stat, not its JSON: the
	// version fences writes, the mtime is stamped by the ZooKeeper leader.
	Version int32 `json:"-"`
	MtimeMs int64 `json:"-"`
}

// MarshalJSON writes the record as it is stored in the slot node.
func (r SlotRecord) MarshalJSON() ([]byte, error) {
	return json.Marshal(slotData{ReservedUntilMs: r.ReservedUntilMs, LastMs: r.LastMs, Holder: r.Holder, UpdatedMs: r.UpdatedMs})
}

// SlotMap is the whole slot map: who holds what, and every slot's timeline.
type SlotMap struct {
	// Leases are the holding lease nodes (the lowest sequence of each slot),
	// sorted by slot.
	Leases []LeaseInfo
	// Slots are the slot nodes: all 1,024 in layout v2 (Holder is empty in
	// one never held), those ever used in a v1 root; a slot missing here
	// is damage.
	Slots map[snowflake.Slot]SlotRecord
	// Damaged are the slot nodes that hold no slot record (overwritten by
	// hand?), with why: workers avoid those slots until an operator writes
	// a valid record. One such node does not hide the rest of the map.
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

// readParallel bounds the concurrent Gets of a map read.
const readParallel = 32

// ReadSlotMap reads the live leases and every slot node under root.
func ReadSlotMap(conn *zk.Conn, root string) (SlotMap, error) {
	leases, err := readLeases(conn, root)
	if err != nil {
		return SlotMap{}, err
	}
	names, _, err := conn.Children(SlotsPath(root))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return SlotMap{}, fmt.Errorf("list %s: %w", SlotsPath(root), err)
	}
	standbys, err := readStandbys(conn, root)
	if err != nil {
		return SlotMap{}, err
	}
	m := SlotMap{Leases: leases, Slots: make(map[snowflake.Slot]SlotRecord, len(names)), Damaged: map[snowflake.Slot]string{}, Owned: AllDatacenters, Standbys: standbys}
	if data, _, err := conn.Get(root); err == nil && len(data) > 0 {
		var info RootInfo
		if err := json.Unmarshal(data, &info); err != nil {
			return SlotMap{}, fmt.Errorf("%w: root %s holds no layout JSON (%v)", ErrLayoutMismatch, root, err)
		}
		if m.Owned, err = info.Owned(); err != nil {
			return SlotMap{}, fmt.Errorf("root %s: %w", root, err)
		}
	} else if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return SlotMap{}, fmt.Errorf("read root %s: %w", root, err)
	}
	var mu sync.Mutex
	err = forEach(names, func(name string) error {
		s, err := snowflake.ParseSlot(name)
		if err != nil {
			return nil // not ours; an operator's note, say
		}
		data, st, err := conn.Get(path.Join(SlotsPath(root), name))
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read slot %s: %w", name, err)
		}
		rec, err := decodeSlot(data)
		if err != nil {
			mu.Lock()
			m.Damaged[s] = err.Error()
			mu.Unlock()
			return nil
		}
		rec.Version, rec.MtimeMs = st.Version, st.Mtime
		mu.Lock()
		m.Slots[s] = rec
		mu.Unlock()
		return nil
	})
	if err != nil {
		return SlotMap{}, err
	}
	return m, nil
}

// readLeases lists leases/ and reads the holding node of each slot.
func readLeases(conn *zk.Conn, root string) ([]LeaseInfo, error) {
	names, _, err := conn.Children(LeasesPath(root))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", LeasesPath(root), err)
	}
	return readLeaseNodes(conn, root, names)
}

func readLeaseNodes(conn *zk.Conn, root string, names []string) ([]LeaseInfo, error) {
	held := holders(names)
	var mu sync.Mutex
	out := make([]LeaseInfo, 0, len(held))
	list := make([]string, 0, len(held))
	for _, h := range held {
		list = append(list, h.name)
	}
	err := forEach(list, func(name string) error {
		s, seq, _ := ParseLeaseName(name)
		data, _, err := conn.Get(path.Join(LeasesPath(root), name))
		if errors.Is(err, zk.ErrNoNode) {
			return nil // released meanwhile
		}
		if err != nil {
			return fmt.Errorf("read lease %s: %w", name, err)
		}
		var d leaseData
		_ = json.Unmarshal(data, &d) // a node without JSON still holds its slot
		mu.Lock()
		out = append(out, LeaseInfo{Node: name, Slot: s, Seq: seq, Addr: d.Addr, HTTP: d.HTTP,
			Host: d.Host, PID: d.PID, Version: d.Version, Since: d.Since, Kind: leaseKind(d.Kind), Program: d.Program})
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot.Index() < out[j].Slot.Index() })
	return out, nil
}

// holder is the lowest-sequence lease node of one slot.
type holder struct {
	name string
	seq  int64
}

// holders maps each slot named in a listing of leases/ to its lowest
// sequence node, the one that holds it.
func holders(names []string) map[snowflake.Slot]holder {
	h := make(map[snowflake.Slot]holder, len(names))
	for _, n := range names {
		s, seq, err := ParseLeaseName(n)
		if err != nil {
			continue
		}
		if cur, ok := h[s]; !ok || LeaseSeqBefore(seq, cur.seq) {
			h[s] = holder{name: n, seq: seq}
		}
	}
	return h
}

// forEach runs fn on every item, readParallel at a time; go-zookeeper
// pipelines concurrent calls on one session.
func forEach(items []string, fn func(string) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, readParallel)
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(it); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// watchRelist is how often WatchLeases re-reads leases/ without a change
// event, in case an event was lost with a session.
const watchRelist = 30 * time.Second

// WatchLeases sends the current holding leases under root, then a new list
// on each change of leases/, until ctx ends; then it closes the channel. A
// slow reader gets the latest list, not every one. Errors (ZooKeeper away)
// are retried; the last good list stays current meanwhile.
func WatchLeases(ctx context.Context, conn *zk.Conn, root string) <-chan []LeaseInfo {
	out := make(chan []LeaseInfo, 1)
	go func() {
		defer close(out)
		var (
			watch <-chan zk.Event // armed one-shot watch on leases/, if any
			last  []LeaseInfo
			sent  bool
		)
		relist := time.NewTicker(watchRelist)
		defer relist.Stop()
		for {
			var names []string
			var err error
			if watch == nil {
				names, _, watch, err = conn.ChildrenW(LeasesPath(root))
			} else {
				names, _, err = conn.Children(LeasesPath(root))
			}
			var list []LeaseInfo
			if err == nil {
				list, err = readLeaseNodes(conn, root, names)
			}
			if err == nil && (!sent || !sameLeases(last, list)) {
				last, sent = list, true
				select {
				case <-out: // drop the unread older list
				default:
				}
				out <- list
			}
			var retry <-chan time.Time
			if err != nil {
				retry = time.After(500 * time.Millisecond)
			}
			select {
			case <-ctx.Done():
				return
			case <-watch:
				watch = nil
			case <-relist.C:
			case <-retry:
			}
		}
	}()
	return out
}

func sameLeases(a, b []LeaseInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
