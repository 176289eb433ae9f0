package zklayout

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

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// ReadLeases lists leases/ and reads the holding node of each slot.
func ReadLeases(conn *zk.Conn, root string) ([]LeaseInfo, error) {
	names, _, err := conn.Children(LeasesPath(root))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", LeasesPath(root), err)
	}
	return readLeaseNodes(conn, root, names)
}

// readLeaseNodes reads the holding node of each slot named in names.
func readLeaseNodes(conn *zk.Conn, root string, names []string) ([]LeaseInfo, error) {
	held := Holders(names)
	var mu sync.Mutex
	out := make([]LeaseInfo, 0, len(held))
	list := make([]string, 0, len(held))
	for _, h := range held {
		list = append(list, h.Name)
	}
	err := zkconn.ForEach(list, func(name string) error {
		s, seq, _ := ParseLeaseName(name)
		data, _, err := conn.Get(path.Join(LeasesPath(root), name))
		if errors.Is(err, zk.ErrNoNode) {
			return nil // released meanwhile
		}
		if err != nil {
			return fmt.Errorf("read lease %s: %w", name, err)
		}
		var d LeaseData
		_ = json.Unmarshal(data, &d) // a node without JSON still holds its slot
		mu.Lock()
		out = append(out, LeaseInfo{Node: name, Slot: s, Seq: seq, Addr: d.Addr, HTTP: d.HTTP,
			Host: d.Host, PID: d.PID, Version: d.Version, Since: d.Since, Kind: LeaseKind(d.Kind), Program: d.Program})
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot.Index() < out[j].Slot.Index() })
	return out, nil
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
