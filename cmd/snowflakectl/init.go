package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// runInit is snowflakectl init: it makes a fleet's root owning the given
// datacenters, after checking that no other fleet of the ensemble owns one.
func runInit(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("init", "[--zk HOST:PORT,...] [--zk-root /snowflake] [--datacenters 0-3,8]",
		"Makes a fleet's root znode with its 1,024 slot nodes, owning the datacenters\n"+
			"--datacenters (ranges such as 0-3,8; all 32 when not given). Its workers claim\n"+
			"only inside them, and it registers the root in the ensemble's fleet registry\n"+
			"("+tree.RegistryPath+"). Refused when another fleet registered there owns one\n"+
			"of them. A root that exists with\n"+
			"the same datacenters is left alone (exit 0); with others, refused; one an\n"+
			"earlier init left half made is finished.\n\n"+
			"Workers never make a root. The slot nodes are reserved past anything an\n"+
			"earlier incarnation of the root (on an ensemble that lost its data) could\n"+
			"still issue: ZooKeeper's time of the make plus --max-horizon plus --max-skew,\n"+
			"which the root records; workers with a larger --horizon or --max-skew are\n"+
			"refused. --new-fleet states that no worker ever served under this root on\n"+
			"any ensemble, and skips that wait.\n\n"+
			"--close-ensemble-root gives ZooKeeper's / the operator's cdrwa and the world's\n"+
			"read, so that nobody else makes znodes at the top of an ensemble the fleet has\n"+
			"to itself (the shipped deployments do).")
	var z zkFlags
	z.register(fs)
	var ids identityFlags
	ids.register(fs, true)
	dcs := fs.String("datacenters", "", "the datacenter `ranges` the fleet owns, such as 0-3,8 (default all 32: 0-31)")
	var skip scanSkipFlag
	skip.register(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "bound on reaching ZooKeeper and making the root")
	maxHorizon := fs.Duration("max-horizon", tree.DefaultMaxHorizon, "the largest --horizon the fleet's workers may run with (recorded in the root)")
	maxSkew := fs.Duration("max-skew", tree.DefaultMaxSkew, "the largest --max-skew the fleet's workers may run with (recorded in the root)")
	newFleet := fs.Bool("new-fleet", false, "no worker has ever served under this root on any ensemble: reserve the slots to the make's time (first IDs at once) rather than --max-horizon + --max-skew past it")
	closeTop := fs.Bool("close-ensemble-root", false, "also give ZooKeeper's / the operator's cdrwa and the world's r: nobody else makes znodes at the top of the ensemble (one the fleet has to itself)")
	if rc := parse(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "init", "unexpected argument %q", fs.Arg(0))
	}
	servers, err := z.check()
	if err != nil {
		return usageError(stderr, "init", "%v", err)
	}
	scheme, _, err := ids.scheme(z.auth, true)
	if err != nil {
		return usageError(stderr, "init", "%v", err)
	}
	owned := tree.AllDatacenters
	if set := flagSet(fs); set["datacenters"] {
		if owned, err = tree.ParseDCSet(*dcs); err != nil {
			return usageError(stderr, "init", "--datacenters: %v", err)
		}
	}
	ic := tree.DefaultInitConfig()
	ic.Root, ic.ACL, ic.Owned = z.root, scheme, owned
	ic.MaxHorizon, ic.MaxSkew, ic.NewFleet = *maxHorizon, *maxSkew, *newFleet
	if err := ic.Validate(); err != nil {
		flagName := map[string]string{"MaxHorizon": "--max-horizon", "MaxSkew": "--max-skew", "Root": "--zk-root", "Owned": "--datacenters"}
		var ce *configerr.Error
		if errors.As(err, &ce) && flagName[ce.Field] != "" {
			return usageError(stderr, "init", "%s %v %s", flagName[ce.Field], ce.Value, ce.Reason)
		}
		return usageError(stderr, "init", "%v", err)
	}
	if *timeout <= 0 {
		return usageError(stderr, "init", "--timeout %v must be positive", *timeout)
	}
	if *closeTop && scheme.Insecure() {
		return usageError(stderr, "init", "--close-ensemble-root needs the operator's and the workers' credentials (--zk-auth-file, --zk-worker-auth-file), not --zk-insecure")
	}
	if err := skip.check(stderr, "init"); err != nil {
		return usageError(stderr, "init", "%v", err)
	}
	conn, err := z.dial(servers, min(*timeout, 10*time.Second))
	if err != nil {
		fmt.Fprintf(stderr, "snowflakectl init: %v\n", err)
		return exitFailure
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	res, err := tree.InitRoot(ctx, conn, ic)
	if err != nil {
		fmt.Fprintf(stderr, "snowflakectl init: %v\n", err)
		if errors.Is(err, zk.ErrNoAuth) {
			fmt.Fprintln(stderr, "snowflakectl init: ZooKeeper refused a write; pass the operator's --zk-auth-file")
		}
		return exitFailure
	}
	where := strings.Join(servers, ",")
	if scheme.Insecure() {
		fmt.Fprintln(stderr, "snowflakectl init: warning: --zk-insecure: the tree is world-writable; anyone reaching ZooKeeper can cause duplicate IDs (snowflakectl secure protects it later)")
	}
	closed := false
	if *closeTop {
		if closed, err = tree.CloseEnsembleRoot(conn, scheme); err != nil {
			fmt.Fprintf(stderr, "snowflakectl init: --close-ensemble-root: %v\n", err)
			return exitFailure
		}
	}
	defer func() {
		if closed {
			fmt.Fprintf(stdout, "closed ZooKeeper's / on %s: only the operator makes znodes there, the world reads\n", where)
		}
	}()
	if !res.Made {
		fmt.Fprintf(stdout, "root %s on %s exists already, layout %s, owning datacenters %s; left as it is\n", z.root, where, res.Layout, owned)
		if res.Registered {
			fmt.Fprintf(stdout, "registered root %s in %s, with its datacenters and bound: its workers serve once they start again\n", z.root, tree.RegistryPath)
		}
		return exitOK
	}
	verb := "made"
	if res.Finished {
		verb = "finished the half-made"
	}
	fmt.Fprintf(stdout, "%s root %s on %s, layout %s, owning datacenters %s (%d slots); %d other fleet(s) registered in the ensemble, none overlapping\n",
		verb, z.root, where, res.Layout, owned, owned.Slots(), others(res.Scan, z.root))
	until := time.UnixMilli(res.ReservedUntilMs).UTC()
	if *newFleet {
		fmt.Fprintf(stdout, "slots reserved until %s (the make's time: --new-fleet); workers serve at once\n", until.Format(time.RFC3339Nano))
	} else {
		fmt.Fprintf(stdout, "slots reserved until %s (the make's time + max horizon %v + max skew %v): workers serve from then on, about %v from now\n",
			until.Format(time.RFC3339Nano), *maxHorizon, *maxSkew, time.Until(until).Round(time.Second))
	}
	return exitOK
}

// flagSet names the flags given on the command line.
func flagSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// others is how many fleets of reg are not root.
func others(reg tree.Scan, root string) int {
	n := 0
	for _, f := range reg.Fleets {
		if f.Root != root {
			n++
		}
	}
	return n
}
