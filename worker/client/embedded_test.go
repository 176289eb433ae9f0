package client

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/idlease"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// Discovery never routes ID requests to an embedded lease: neither to a
// real one (a Go program issuing IDs to itself, no address) nor to a node
// that says kind embedded and names an address all the same; a worker's
// node beside them is used.
func TestEmbeddedLeaseNotDiscovered(t *testing.T) {
	zks := zktest.Start(t)
	root := "/embedded-discovery"
	fleettest.InitFleet(t, []string{zks.Addr()}, root, "", tlsfiles.Files{})
	ecfg := idlease.DefaultConfig()
	ecfg.Servers, ecfg.Root, ecfg.SessionTimeout = []string{zks.Addr()}, root, 2*time.Second
	ecfg.Insecure = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lease, err := idlease.Open(ctx, ecfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	node := func(guid int, s snowflake.Slot, kind, addr string) {
		data, _ := json.Marshal(map[string]string{"addr": addr, "kind": kind})
		if _, err := conn.Create(zklayout.LeasesPath(root)+"/_c_"+fmtGUID(guid)+"-"+s.String()+"-", data,
			zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	embSlot, workerSlot := snowflake.Slot{Datacenter: 30, Machine: 1}, snowflake.Slot{Datacenter: 30, Machine: 2}
	embAddr, workerAddr := rogue(t, embSlot), rogue(t, workerSlot)
	node(1, embSlot, zklayout.KindEmbedded, embAddr)
	node(2, workerSlot, zklayout.KindWorker, workerAddr)
	cfg := DefaultConfig()
	cfg.Servers, cfg.Root, cfg.SessionTimeout = []string{zks.Addr()}, root, 2*time.Second
	c, _ := newTestClient(t, cfg)
	// Both nodes were made before the client's first listing.
	waitEndpoints(t, c, 1)
	if eps := c.Endpoints(); !slices.Equal(eps, []string{workerAddr}) {
		t.Fatalf("endpoints %v; want only the worker %s (the embedded node named %s)", eps, workerAddr, embAddr)
	}
	for range 20 {
		id, err := c.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if f, _ := snowflake.Decode(id); f.Slot() != workerSlot {
			t.Fatalf("ID %d of slot %s: not the worker's %s", id, f.Slot(), workerSlot)
		}
	}
}

func fmtGUID(n int) string { return fmt.Sprintf("%032d", n) }
