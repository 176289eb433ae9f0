//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// placeholderHost marks the lease nodes the suite makes itself.
const placeholderHost = "integration-placeholder"

// Placeholders hold every free slot of the workers' datacenter but the ones
// named, through lease nodes of a session of the suite's own. With them a
// standby worker can only take the slot the fault frees, so a zombie and its
// successor really share a slot, and a restarted worker gets its former one.
type Placeholders struct {
	conn *zk.Conn
}

// HoldFreeSlots fills the datacenter's free slots, as the worker identity.
func HoldFreeSlots(ctx context.Context, st *Stack) (*Placeholders, error) {
	conn, err := st.DialZKAs(ctx, st.ids.Worker)
	if err != nil {
		return nil, err
	}
	sm, err := tree.ReadSlotMap(conn, zkRoot)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("read the slot map: %w", err)
	}
	held := map[snowflake.Slot]bool{}
	for _, l := range sm.Leases {
		held[l.Slot] = true
	}
	data, _ := json.Marshal(map[string]any{"addr": "", "host": placeholderHost, "pid": 0, "version": "integration"})
	p := &Placeholders{conn: conn}
	for m := 0; m < 32; m++ {
		s := snowflake.Slot{Datacenter: datacenter, Machine: m}
		if held[s] {
			continue
		}
		if _, err := conn.Create(zklayout.LeasePrefix(zkRoot, s), data, zk.FlagEphemeral|zk.FlagSequence, tree.WorkerNodeACL(true)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("hold slot %s: %w", s, err)
		}
	}
	return p, nil
}

// Release frees the slots (closing the session deletes its nodes).
func (p *Placeholders) Release() {
	if p != nil && p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
}
