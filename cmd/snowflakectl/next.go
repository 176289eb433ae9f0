package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/cmd/internal/cliflag"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/client"
)

func (c *ctl) nextCommand() *ffcli.Command {
	fs := newFlagSet("next")
	c.zk.register(fs)
	c.sec.register(fs)
	addrs := fs.String("addr", "", "worker `addresses`, comma-separated host:port, instead of ZooKeeper discovery")
	n := fs.Int("n", 1, fmt.Sprintf("how many IDs: `N` in 1..%d", client.MaxBatch))
	timeout := fs.Duration("timeout", 5*time.Second, "bound on the whole call, discovery and retries included")
	decode := fs.Bool("decode", false, "print each ID's time, slot and sequence after it (tab-separated)")
	return c.command(fs, "[-n N] [--addr HOST:PORT,... | --zk HOST:PORT,...] [--decode]",
		"fetch IDs from the fleet",
		"Prints IDs from the fleet, one per line, through the Go client (worker/client):\n"+
			"workers are found from the lease nodes in ZooKeeper, or taken from --addr, and\n"+
			"a worker that refuses (-NOLEASE, -CLOCKBACK) or fails is skipped for another.\n"+
			"-n above 1 asks one worker for a contiguous ascending run (NEXTRANGE n; NEXTIDS n\n"+
			"on a worker without NEXTRANGE).",
		func(ctx context.Context, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			if *n < 1 || *n > client.MaxBatch {
				return usagef("-n must be in 1..%d, got %d", client.MaxBatch, *n)
			}
			if *timeout <= 0 {
				return usagef("--timeout %v must be positive", *timeout)
			}
			cfg, err := c.clientConfig(fs, *addrs)
			if err != nil {
				return err
			}
			cfg.CallTimeout = *timeout
			dial, err := c.sec.options()
			if err != nil {
				return usage(err)
			}
			cfg.Password, cfg.TLS = dial.Password, dial.TLS
			cl, err := client.New(cfg, nil, nil)
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			var ids []int64
			if *n == 1 {
				var id int64
				id, err = cl.Next(ctx)
				ids = []int64{id}
			} else {
				ids, err = cl.NextN(ctx, *n)
			}
			if err != nil {
				return err
			}
			c.printIDs(ids, *decode)
			return nil
		})
}

// printIDs writes one ID a line, with its time, slot and sequence when
// decode.
func (c *ctl) printIDs(ids []int64, decode bool) {
	w := bufio.NewWriter(c.stdout)
	defer w.Flush()
	for _, id := range ids {
		if !decode {
			fmt.Fprintln(w, id)
			continue
		}
		f, err := snowflake.Decode(id)
		if err != nil {
			fmt.Fprintf(w, "%d\t(%v)\n", id, err)
			continue
		}
		fmt.Fprintf(w, "%d\t%s\t%s\tseq %d\n", id, f.Time().UTC().Format(msTime), f.Slot(), f.Sequence)
	}
}

// clientConfig builds a client config from --addr or the ZooKeeper flags;
// every error is a usage error.
func (c *ctl) clientConfig(fs *flag.FlagSet, addrs string) (client.Config, error) {
	cfg := client.DefaultConfig()
	if addrs != "" {
		if flagSet(fs)["zk"] {
			return cfg, usagef("give --addr or --zk, not both")
		}
		cfg.Static = cliflag.SplitAddrs(addrs)
		if len(cfg.Static) == 0 {
			return cfg, usagef("--addr %q lists no address", addrs)
		}
		for _, a := range cfg.Static {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return cfg, usagef("--addr entry %q is not host:port", a)
			}
		}
	} else {
		servers, err := c.zk.check()
		if err != nil {
			return cfg, usage(err)
		}
		cfg.Servers, cfg.Root, cfg.Auth, cfg.ZKTLS = servers, c.zk.root, c.zk.auth, c.zk.tls.files
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usage(err)
	}
	return cfg, nil
}
