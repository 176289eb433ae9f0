// Command idlease-example issues Snowflake IDs inside its own process from
// an embedded lease (package coordinator/idlease): it leases a slot in a
// snowfleet fleet's ZooKeeper tree, prints IDs, and releases the slot on
// exit or SIGINT/SIGTERM. Against make up's ensemble:
//
//	ZK=127.0.0.1:$(docker-compose -p snowfleet port zk1 2181 | cut -d: -f2)
//	go run ./cmd/idlease-example --zk $ZK --count 5
//
// It is an example to read: one oklog/run group holding the lease's actor
// pair, the signal handler and the issuer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	oklog "github.com/oklog/run"

	"github.com/snowfleet/snowfleet/coordinator/idlease"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/snowflake"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run returns 0 after the IDs asked for (or a signal) and a release, 1 when
// no lease could be had or it stopped on a fault, 2 on bad flags.
func run(args []string, stdout, stderr io.Writer) int {
	cfg := idlease.DefaultConfig()
	fs := flag.NewFlagSet("idlease-example", flag.ContinueOnError)
	fs.SetOutput(stderr)
	zk := fs.String("zk", "127.0.0.1:2181", "ZooKeeper servers, host:port,...")
	fs.StringVar(&cfg.Root, "zk-root", cfg.Root, "the fleet's root znode (made by snowflakectl init)")
	fs.IntVar(&cfg.Datacenter, "datacenter", cfg.Datacenter, "pin to this datacenter's 32 slots (-1: any the root owns)")
	fs.DurationVar(&cfg.SessionTimeout, "session-timeout", cfg.SessionTimeout, "ZooKeeper session timeout")
	fs.DurationVar(&cfg.Renew, "renew", cfg.Renew, "how often the reservation is extended")
	fs.DurationVar(&cfg.Horizon, "horizon", cfg.Horizon, "how far ahead the reservation runs")
	fs.DurationVar(&cfg.StandbyHorizon, "standby-horizon", cfg.StandbyHorizon, "the reservation while a standby waits (0: never shorten)")
	fs.DurationVar(&cfg.MaxClockLead, "max-clock-lead", cfg.MaxClockLead, "how far the logical clock may run ahead of a clock stepped back")
	clockBack := fs.String("on-clock-back", cfg.OnClockBack.String(), "logical or refuse")
	count := fs.Int("count", 10, "IDs to print, then release and exit (0: until SIGINT/SIGTERM)")
	every := fs.Duration("every", 0, "pause between IDs")
	openTimeout := fs.Duration("open-timeout", 30*time.Second, "how long to wait for a slot")
	wait := fs.Duration("wait", 10*time.Second, "how long one ID may wait for the lease (a re-claim)")
	authFile := fs.String("zk-auth-file", "", "`file` holding the workers' ZooKeeper identity, user:password (make up writes one into the zk-worker volume)")
	fs.BoolVar(&cfg.Insecure, "zk-insecure", false, "run without ZooKeeper credentials, against a fleet made with snowflakectl init --zk-insecure")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.Servers = strings.Split(*zk, ",")
	var err error
	if *authFile != "" {
		if cfg.Auth, err = zkconn.ReadAuthFile(*authFile); err != nil {
			fmt.Fprintf(stderr, "idlease-example: --zk-auth-file: %v\n", err)
			return 2
		}
	}
	if cfg.OnClockBack, err = snowflake.ParseClockBackPolicy(*clockBack); err != nil {
		fmt.Fprintf(stderr, "idlease-example: --on-clock-back: %v\n", err)
		return 2
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "idlease-example", Output: stderr})
	lease, err := idlease.New(cfg, log, nil)
	if err != nil {
		fmt.Fprintf(stderr, "idlease-example: %v\n", err)
		return 2
	}

	var g oklog.Group
	g.Add(lease.Actor())
	g.Add(oklog.SignalHandler(context.Background(), syscall.SIGINT, syscall.SIGTERM))
	ctx, stop := context.WithCancel(context.Background())
	g.Add(func() error { return issue(ctx, lease, log, stdout, *count, *every, *openTimeout, *wait) }, func(error) { stop() })
	err = g.Run()
	var sig oklog.SignalError
	switch {
	case err == nil, errors.As(err, &sig), errors.Is(err, context.Canceled):
		log.Info("released", "status", lease.Status().State)
		return 0
	default:
		log.Error("stopped", "error", err)
		return 1
	}
}

// issue waits for the lease, then prints count IDs (forever with 0), one a
// line: the ID, its time, slot and sequence.
func issue(ctx context.Context, lease *idlease.Lease, log hclog.Logger, w io.Writer, count int, every, openTimeout, wait time.Duration) error {
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	err := lease.WaitReady(octx)
	cancel()
	if err != nil {
		return err
	}
	slot, _ := lease.Slot()
	log.Info("holding slot", "slot", slot.String(), "lease", lease.Status().LeaseNode)
	for i := 0; count == 0 || i < count; i++ {
		nctx, cancel := context.WithTimeout(ctx, wait)
		id, err := lease.Next(nctx)
		cancel()
		if err != nil {
			return err
		}
		f, _ := snowflake.Decode(id)
		fmt.Fprintf(w, "%d\t%s\t%s\tseq %d\n", id, f.Time().Format("2006-01-02T15:04:05.000Z"), f.Slot(), f.Sequence)
		if every > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(every):
			}
		}
	}
	return nil
}
