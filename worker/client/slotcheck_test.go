package client

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// rogue is a RESP server that answers every NEXTID with an ID of slot s:
// the server a forged lease node points discovery at.
func rogue(t *testing.T, s snowflake.Slot) string {
	t.Helper()
	var seq atomic.Int64
	return fakeWorker(t, func() int64 {
		n := int(seq.Add(1) % 4096)
		id, _ := snowflake.Encode(snowflake.Fields{UnixMs: time.Now().UnixMilli(), Datacenter: s.Datacenter, Machine: s.Machine, Sequence: n})
		return id
	})
}

// fakeWorker is a RESP server on loopback that answers every NEXTID with
// next(); closed with the test.
func fakeWorker(t *testing.T, next func() int64) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "*") || strings.HasPrefix(line, "$") {
						continue // the array and bulk headers of *1 $6 NEXTID
					}
					fmt.Fprintf(c, ":%d\r\n", next())
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A lease node forged by anyone who may write leases/ pointed discovery at
// a rogue server answering IDs of a slot a real worker holds: the client
// handed them out as the fleet's. Now every ID must be of the slot of the
// lease node its worker was found by; the rogue's replies are dropped,
// counted, and the worker backed off.
func TestForgedLeaseNodeDropped(t *testing.T) {
	zks := zktest.Start(t)
	root := "/forged"
	fleettest.InitFleet(t, []string{zks.Addr()}, root, "", tlsfiles.Files{})
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	forgedSlot, realSlot := snowflake.Slot{Datacenter: 1, Machine: 1}, snowflake.Slot{Datacenter: 2, Machine: 2}
	data, _ := json.Marshal(map[string]string{"addr": rogue(t, realSlot)})
	if _, err := conn.Create(zklayout.LeasesPath(root)+"/_c_00000000000000000000000000000000-"+forgedSlot.String()+"-", data,
		zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Servers, cfg.Root, cfg.SessionTimeout = []string{zks.Addr()}, root, 2*time.Second
	cfg.CallTimeout = time.Second
	c, _ := newTestClient(t, cfg)
	waitEndpoints(t, c, 1)
	id, err := c.Next(context.Background())
	var se *SlotError
	if err == nil || !errors.As(err, &se) || se.Want != forgedSlot || se.Got != realSlot {
		t.Fatalf("Next through a forged lease node: %d, %v; want no ID and a *SlotError naming %s and %s", id, err, forgedSlot, realSlot)
	}
	if n := value(c.m.slotMismatches); n < 1 {
		t.Errorf("snowflake_client_slot_mismatches_total = %v, want at least 1", n)
	}
	// A server answering the slot its lease node names is served.
	good := snowflake.Slot{Datacenter: 3, Machine: 3}
	data, _ = json.Marshal(map[string]string{"addr": rogue(t, good)})
	if _, err := conn.Create(zklayout.LeasesPath(root)+"/_c_00000000000000000000000000000001-"+good.String()+"-", data,
		zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	waitEndpoints(t, c, 2)
	for range 20 {
		id, err := c.Next(context.Background())
		if err != nil {
			continue // the call may pick the rogue of the wrong slot and run out of time
		}
		if f, _ := snowflake.Decode(id); f.Slot() != good {
			t.Fatalf("the client handed out ID %d of slot %s", id, f.Slot())
		}
		return
	}
	t.Fatal("no ID from the server answering its own slot")
}
