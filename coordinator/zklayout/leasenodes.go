package zklayout

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// leaseNodes keeps what each lease node holds, by name, as Curator's path
// cache keeps child data: a lease node is written once, at its create, so a
// reader of leases/ reads each node once however often the listing
// changes. A change then costs one list and one read of each new node, not
// a read of every node (which made one worker's replacement cost a fleet of
// N watchers N reads each).
type leaseNodes map[string]leaseNode

// leaseNode is one lease node as read: what it says, and whether a live
// session holds it (an ephemeral node). A persistent node named like a
// lease is not a lease: no session's end removes it, and no worker made it.
type leaseNode struct {
	info      LeaseInfo
	ephemeral bool
}

// holders reads the lease nodes of names not read before, forgets those no
// longer listed, and returns the holding lease of each slot: the lowest
// sequence among the ephemeral nodes, sorted by slot. Names that are not
// lease node names are neither read nor counted.
func (c leaseNodes) holders(conn *zk.Conn, root string, names []string) ([]LeaseInfo, error) {
	listed := make(map[string]bool, len(names))
	var fresh []string
	for _, n := range names {
		if _, _, err := ParseLeaseName(n); err != nil {
			continue
		}
		listed[n] = true
		if _, ok := c[n]; !ok {
			fresh = append(fresh, n)
		}
	}
	for n := range c {
		if !listed[n] {
			delete(c, n)
		}
	}
	var mu sync.Mutex
	err := zkconn.ForEach(fresh, func(name string) error {
		node, ok, err := readLeaseNode(conn, root, name)
		if err != nil || !ok {
			return err
		}
		mu.Lock()
		c[name] = node
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	live := make([]string, 0, len(c))
	for n, node := range c {
		if node.ephemeral {
			live = append(live, n)
		}
	}
	held := Holders(live)
	out := make([]LeaseInfo, 0, len(held))
	for _, h := range held {
		out = append(out, c[h.Name].info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot.Index() < out[j].Slot.Index() })
	return out, nil
}

// readLeaseNode reads one lease node; ok is false when it is gone (released
// since the listing).
func readLeaseNode(conn *zk.Conn, root, name string) (leaseNode, bool, error) {
	s, seq, _ := ParseLeaseName(name)
	data, st, err := conn.Get(path.Join(LeasesPath(root), name))
	if errors.Is(err, zk.ErrNoNode) {
		return leaseNode{}, false, nil
	}
	if err != nil {
		return leaseNode{}, false, fmt.Errorf("read lease %s: %w", name, err)
	}
	var d LeaseData
	_ = json.Unmarshal(data, &d) // a node without JSON still holds its slot
	return leaseNode{
		info: LeaseInfo{Node: name, Slot: s, Seq: seq, Addr: d.Addr, HTTP: d.HTTP,
			Host: d.Host, PID: d.PID, Version: d.Version, Since: d.Since, Kind: LeaseKind(d.Kind), Program: d.Program},
		ephemeral: st.EphemeralOwner != 0,
	}, true, nil
}
