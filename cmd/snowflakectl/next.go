package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/snowfleet/snowfleet/cmd/internal/cliflag"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/client"
)

func runNext(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("next", "[-n N] [--addr HOST:PORT,... | --zk HOST:PORT,...] [--decode]",
		"Prints IDs from the fleet, one per line, through the Go client (worker/client):\n"+
			"workers are found from the lease nodes in ZooKeeper, or taken from --addr, and\n"+
			"a worker that refuses (-NOLEASE, -CLOCKBACK) or fails is skipped for another.\n"+
			"-n above 1 asks one worker for a contiguous ascending run (NEXTRANGE n; NEXTIDS n\n"+
			"on a worker without NEXTRANGE).")
	var z zkFlags
	z.register(fs)
	var sec secFlags
	sec.register(fs)
	addrs := fs.String("addr", "", "worker `addresses`, comma-separated host:port, instead of ZooKeeper discovery")
	n := fs.Int("n", 1, fmt.Sprintf("how many IDs: `N` in 1..%d", client.MaxBatch))
	timeout := fs.Duration("timeout", 5*time.Second, "bound on the whole call, discovery and retries included")
	decode := fs.Bool("decode", false, "print each ID's time, slot and sequence after it (tab-separated)")
	if rc := parse(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "next", "unexpected argument %q", fs.Arg(0))
	}
	if *n < 1 || *n > client.MaxBatch {
		return usageError(stderr, "next", "-n must be in 1..%d, got %d", client.MaxBatch, *n)
	}
	if *timeout <= 0 {
		return usageError(stderr, "next", "--timeout %v must be positive", *timeout)
	}
	cfg, rc := clientConfig(fs, &z, *addrs, "next", stderr)
	if rc >= 0 {
		return rc
	}
	cfg.CallTimeout = *timeout
	dial, err := sec.options()
	if err != nil {
		return usageError(stderr, "next", "%v", err)
	}
	cfg.Password, cfg.TLS = dial.Password, dial.TLS
	c, err := client.New(cfg, nil, nil)
	if err != nil {
		fmt.Fprintf(stderr, "snowflakectl next: %v\n", err)
		return exitFailure
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var ids []int64
	if *n == 1 {
		var id int64
		id, err = c.Next(ctx)
		ids = []int64{id}
	} else {
		ids, err = c.NextN(ctx, *n)
	}
	if err != nil {
		fmt.Fprintf(stderr, "snowflakectl next: %v\n", err)
		return exitFailure
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for _, id := range ids {
		if !*decode {
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
	return exitOK
}

// clientConfig builds a client config from --addr or the ZooKeeper flags;
// rc >= 0 is a usage error already printed.
func clientConfig(fs *flag.FlagSet, z *zkFlags, addrs, cmd string, stderr io.Writer) (client.Config, int) {
	cfg := client.DefaultConfig()
	zkSet := false
	fs.Visit(func(f *flag.Flag) { zkSet = zkSet || f.Name == "zk" })
	if addrs != "" {
		if zkSet {
			return cfg, usageError(stderr, cmd, "give --addr or --zk, not both")
		}
		cfg.Static = cliflag.SplitAddrs(addrs)
		if len(cfg.Static) == 0 {
			return cfg, usageError(stderr, cmd, "--addr %q lists no address", addrs)
		}
		for _, a := range cfg.Static {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return cfg, usageError(stderr, cmd, "--addr entry %q is not host:port", a)
			}
		}
	} else {
		servers, err := z.check()
		if err != nil {
			return cfg, usageError(stderr, cmd, "%v", err)
		}
		cfg.Servers, cfg.Root, cfg.Auth, cfg.ZKTLS = servers, z.root, z.auth, z.tls.files
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError(stderr, cmd, "%v", err)
	}
	return cfg, -1
}
