package idlease_test

import (
	"context"
	"fmt"
	"time"

	"github.com/oklog/run"

	"github.com/snowfleet/snowfleet/coordinator/idlease"
	"github.com/snowfleet/snowfleet/snowflake"
)

// A service opens its lease at start, takes IDs from it, and closes it on
// the way out (which hands the slot to a successor at once).
func ExampleOpen() {
	cfg := idlease.DefaultConfig()
	cfg.Servers = []string{"zk1:2181", "zk2:2181", "zk3:2181"}
	cfg.Root = "/ids-embedded" // a fleet root of its own: snowflakectl init --datacenters 24-31
	cfg.Program = "billing"

	octx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	lease, err := idlease.Open(octx, cfg, nil, nil)
	cancel()
	if err != nil {
		fmt.Println(err) // a *idlease.NotReadyError says where it stood
		return
	}
	defer lease.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	id, err := lease.Next(ctx) // waits through a re-claim, up to ctx
	if err != nil {
		fmt.Println(err)
		return
	}
	f, _ := snowflake.Decode(id)
	fmt.Println(id, f.Slot(), f.Time())
}

// In an oklog/run group the lease is one actor: the group's end releases it.
func ExampleLease_Actor() {
	lease, err := idlease.New(idlease.DefaultConfig(), nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	var g run.Group
	g.Add(lease.Actor())
	ctx, cancel := context.WithCancel(context.Background())
	g.Add(func() error {
		id, err := lease.Next(ctx) // the first waits for the claim
		fmt.Println(id)
		return err
	}, func(error) { cancel() })
	_ = g.Run()
}
