package client

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

func dialZK(cfg Config, log hclog.Logger) (*zk.Conn, error) {
	conn, err := cfg.zk().Dial(log.Named("zk"))
	if err != nil {
		return nil, fmt.Errorf("client: open zookeeper session: %w", err)
	}
	return conn, nil
}

// discover follows the lease nodes until ctx ends: each holding lease of a
// worker with an address (LeaseInfo.Serves) is a target, which must return
// IDs of that lease's slot only. An embedded lease (a Go program issuing
// IDs to itself) serves nobody and is left out. WatchLeases keeps the last
// good list while ZooKeeper is away, so the workers stay in use through an
// outage.
func (c *Client) discover(ctx context.Context) {
	defer close(c.done)
	for leases := range zklayout.WatchLeases(ctx, c.zk, c.cfg.Root) {
		ts := make([]target, 0, len(leases))
		for _, l := range leases {
			if l.Kind == zklayout.KindEmbedded {
				continue
			}
			if !l.Serves() {
				c.log.Warn("lease node serves no ID requests (no address, or an unknown kind)", "node", l.Node, "slot", l.Slot.String(), "kind", l.Kind)
				continue
			}
			// Every ID from it must be of the slot its lease node names.
			ts = append(ts, target{addr: l.Addr, slot: int32(l.Slot.Index())})
		}
		c.setEndpoints(ts)
	}
}
