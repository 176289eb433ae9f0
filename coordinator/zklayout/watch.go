package zklayout

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// ReadLeases lists leases/ and reads the holding node of each slot (an
// ephemeral node: a persistent one named like a lease holds nothing).
func ReadLeases(conn *zk.Conn, root string) ([]LeaseInfo, error) {
	names, _, err := conn.Children(LeasesPath(root))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", LeasesPath(root), err)
	}
	return leaseNodes{}.holders(conn, root, names)
}

// watchRelist is how often WatchLeases lists leases/ again without a
// change event, in case an event was lost with a session.
const watchRelist = 30 * time.Second

// WatchLeases sends the current holding leases under root, then a new list
// on each change of leases/, until ctx ends; then it closes the channel. A
// slow reader gets the latest list, not every one. Errors (ZooKeeper away)
// are retried; the last good list stays current meanwhile. Each lease node
// is read once (leaseNodes): a change costs one list and a read of each
// new node.
func WatchLeases(ctx context.Context, conn *zk.Conn, root string) <-chan []LeaseInfo {
	out := make(chan []LeaseInfo, 1)
	go func() {
		defer close(out)
		var (
			watch <-chan zk.Event // armed one-shot watch on leases/, if any
			last  []LeaseInfo
			sent  bool
			nodes = leaseNodes{}
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
				list, err = nodes.holders(conn, root, names)
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
