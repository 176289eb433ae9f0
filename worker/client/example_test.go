package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/worker/client"
)

// A client that finds the workers through ZooKeeper. (Not run: it needs a
// fleet; fleet_test.go runs the same calls against real workers.)
func ExampleNew() {
	cfg := client.DefaultConfig()
	cfg.Servers = []string{"zk1:2181", "zk2:2181", "zk3:2181"} // or cfg.Static = []string{"10.0.0.5:7609"}
	cfg.Root = "/snowflake"
	c, err := client.New(cfg, hclog.Default().Named("ids"), prometheus.DefaultRegisterer)
	if err != nil {
		log.Fatal(err) // a bad Config: the message names the field
	}
	defer c.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	id, err := c.Next(ctx)
	if err != nil {
		log.Fatal(err) // errors.Is(err, client.ErrNoWorkers): no worker answered in time
	}
	batch, err := c.NextN(ctx, 100) // one NEXTIDS 100: ascending, from one worker
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(id, batch[0], batch[99])
}
