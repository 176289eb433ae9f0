package coordinator

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// ErrNoSession: the coordinator is not running (Run has not started, or
// has returned), so the slot map is not read.
var ErrNoSession = errors.New("coordinator has no ZooKeeper session (not running)")

// ReadSlotMap reads the whole slot map, on a session of its own
// (mapSession), never the lease's, while Run runs. go-zookeeper has no call
// timeouts: the read runs on its own goroutine, and ctx bounds the wait
// (the read itself ends when ZooKeeper answers or the session fails), so a
// caller should let only one run at a time.
func (c *Coordinator) ReadSlotMap(ctx context.Context) (tree.SlotMap, error) {
	if !c.running.Load() {
		return tree.SlotMap{}, ErrNoSession
	}
	conn, err := c.maps.get(func() (*zk.Conn, error) {
		return zkconn.Connect(c.cfg.Servers, c.cfg.TLS, c.cfg.SessionTimeout, c.log.Named("slotmap"), nil)
	})
	if err != nil {
		return tree.SlotMap{}, fmt.Errorf("read slot map: %w", err)
	}
	var m tree.SlotMap
	answered, err := zkconn.Call(ctx, func() (err error) { m, err = tree.ReadSlotMap(conn, c.cfg.Root); return })
	if !answered {
		return tree.SlotMap{}, fmt.Errorf("read slot map: %w (%w)", ErrCallTimeout, err)
	}
	return m, err
}
