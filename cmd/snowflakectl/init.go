package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// initCommand is snowflakectl init: it makes a fleet's root owning the
// given datacenters, after checking that no other fleet of the ensemble
// owns one.
func (c *ctl) initCommand() *ffcli.Command {
	fs := newFlagSet("init")
	c.zk.register(fs)
	c.ids.register(fs, true)
	dcs := fs.String("datacenters", "", "the datacenter `ranges` the fleet owns, such as 0-3,8 (default all 32: 0-31)")
	var skip scanSkipFlag
	skip.register(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "bound on reaching ZooKeeper and making the root")
	maxHorizon := fs.Duration("max-horizon", tree.DefaultMaxHorizon, "the largest --horizon the fleet's workers may run with (recorded in the root)")
	maxSkew := fs.Duration("max-skew", tree.DefaultMaxSkew, "the largest --max-skew the fleet's workers may run with (recorded in the root)")
	newFleet := fs.Bool("new-fleet", false, "no worker has ever served under this root on any ensemble: reserve the slots to the make's time (first IDs at once) rather than --max-horizon + --max-skew past it")
	closeTop := fs.Bool("close-ensemble-root", false, "also give ZooKeeper's / the operator's cdrwa and the world's r: nobody else makes znodes at the top of the ensemble (one the fleet has to itself)")
	return c.command(fs, "[--zk HOST:PORT,...] [--zk-root /snowflake] [--datacenters 0-3,8]",
		"make a fleet's root owning --datacenters ranges (refused when another fleet owns one)",
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
			"to itself (the shipped deployments do).",
		func(ctx context.Context, args []string) error {
			servers, scheme, _, err := c.treeWriter(args, true)
			if err != nil {
				return err
			}
			owned := tree.AllDatacenters
			if flagSet(fs)["datacenters"] {
				if owned, err = tree.ParseDCSet(*dcs); err != nil {
					return usagef("--datacenters: %v", err)
				}
			}
			ic := tree.DefaultInitConfig()
			ic.Root, ic.ACL, ic.Owned = c.zk.root, scheme, owned
			ic.MaxHorizon, ic.MaxSkew, ic.NewFleet = *maxHorizon, *maxSkew, *newFleet
			if err := ic.Validate(); err != nil {
				flagName := map[string]string{"MaxHorizon": "--max-horizon", "MaxSkew": "--max-skew", "Root": "--zk-root", "Owned": "--datacenters"}
				var ce *configerr.Error
				if errors.As(err, &ce) && flagName[ce.Field] != "" {
					return usagef("%s %v %s", flagName[ce.Field], ce.Value, ce.Reason)
				}
				return usage(err)
			}
			if *timeout <= 0 {
				return usagef("--timeout %v must be positive", *timeout)
			}
			if *closeTop && scheme.Insecure() {
				return usagef("--close-ensemble-root needs the operator's and the workers' credentials (--zk-auth-file, --zk-worker-auth-file), not --zk-insecure")
			}
			if err := skip.check(c, "init"); err != nil {
				return usage(err)
			}
			conn, ctx, done, err := c.zk.session(ctx, servers, *timeout)
			if err != nil {
				return err
			}
			defer done()
			res, err := tree.InitRoot(ctx, conn, ic)
			if err != nil {
				return hintNoAuth(err, "ZooKeeper refused a write; pass the operator's --zk-auth-file")
			}
			where := strings.Join(servers, ",")
			if scheme.Insecure() {
				c.warnf("init", "warning: --zk-insecure: the tree is world-writable; anyone reaching ZooKeeper can cause duplicate IDs (snowflakectl secure protects it later)")
			}
			if *closeTop {
				closed, err := tree.CloseEnsembleRoot(conn, scheme)
				if err != nil {
					return fmt.Errorf("--close-ensemble-root: %w", err)
				}
				if closed {
					defer fmt.Fprintf(c.stdout, "closed ZooKeeper's / on %s: only the operator makes znodes there, the world reads\n", where)
				}
			}
			c.printInit(res, where, owned, *maxHorizon, *maxSkew, *newFleet)
			return nil
		})
}

// printInit says what init did to the root.
func (c *ctl) printInit(res tree.InitResult, where string, owned tree.DCSet, maxHorizon, maxSkew time.Duration, newFleet bool) {
	root := c.zk.root
	if !res.Made {
		fmt.Fprintf(c.stdout, "root %s on %s exists already, layout %s, owning datacenters %s; left as it is\n", root, where, res.Layout, owned)
		if res.Registered {
			fmt.Fprintf(c.stdout, "registered root %s in %s, with its datacenters and bound: its workers serve once they start again\n", root, tree.RegistryPath)
		}
		return
	}
	verb := "made"
	if res.Finished {
		verb = "finished the half-made"
	}
	fmt.Fprintf(c.stdout, "%s root %s on %s, layout %s, owning datacenters %s (%d slots); %d other fleet(s) registered in the ensemble, none overlapping\n",
		verb, root, where, res.Layout, owned, owned.Slots(), others(res.Scan, root))
	until := time.UnixMilli(res.ReservedUntilMs).UTC()
	if newFleet {
		fmt.Fprintf(c.stdout, "slots reserved until %s (the make's time: --new-fleet); workers serve at once\n", until.Format(time.RFC3339Nano))
	} else {
		fmt.Fprintf(c.stdout, "slots reserved until %s (the make's time + max horizon %v + max skew %v): workers serve from then on, about %v from now\n",
			until.Format(time.RFC3339Nano), maxHorizon, maxSkew, time.Until(until).Round(time.Second))
	}
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
