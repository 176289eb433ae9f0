package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// recoverCommand is snowflakectl recover: after ZooKeeper was restored
// from a backup, it raises every slot node past anything the fleet could
// have issued since, keeping the root's datacenters.
func (c *ctl) recoverCommand() *ffcli.Command {
	fs := newFlagSet("recover")
	c.zk.register(fs)
	c.ids.register(fs, false)
	yes := fs.Bool("yes", false, "do not ask for confirmation (for scripts)")
	timeout := fs.Duration("timeout", 60*time.Second, "bound on reaching ZooKeeper and writing every slot node")
	return c.command(fs, "[--yes] [--zk HOST:PORT,...] [--zk-root /snowflake]",
		"after a restore of ZooKeeper from a backup: raise every slot past what the fleet could have issued (asks first)",
		"For an ensemble restored from a backup: the restored slot nodes carry the\n"+
			"reservations of the backup's moment, below what the workers of the moment\n"+
			"of the restore issued. recover raises every slot node's reservation to\n"+
			"ZooKeeper's time at its start plus the root's bound (max horizon + max skew,\n"+
			"41s by default), makes or rewrites missing and damaged slot nodes with it,\n"+
			"and then, last, writes a new recovery marker into the root. The root's\n"+
			"datacenters are kept. Every slot's next holder then waits out that bound.\n"+
			"Workers that saw the ensemble go back in time claim again once the marker\n"+
			"is there, without a restart; a recover that stops part-way leaves none:\n"+
			"run it again. Asks for confirmation; --yes skips it, and without a\n"+
			"terminal --yes is required.",
		func(ctx context.Context, args []string) error {
			servers, scheme, given, err := c.treeWriter(args, false)
			if err != nil {
				return err
			}
			if *timeout <= 0 {
				return usagef("--timeout %v must be positive", *timeout)
			}
			if err := c.mayAsk(*yes); err != nil {
				return err
			}
			// Nothing on stdout says what recover does before it has done it:
			// the question says what it will do; the summary comes after the
			// last write.
			if err := c.ask(*yes, fmt.Sprintf(
				"recover %s on %s will raise every slot node to now + the root's bound; every slot's next holder waits that long. Run this only after restoring ZooKeeper from a backup.",
				c.zk.root, strings.Join(servers, ","))); err != nil {
				return err
			}
			conn, ctx, done, err := c.zk.session(ctx, servers, *timeout)
			if err != nil {
				return err
			}
			defer done()
			if !given {
				if scheme, err = tree.FleetACLFromTree(conn, c.zk.root, c.zk.auth); err != nil {
					return err
				}
			}
			res, err := tree.RecoverRoot(ctx, conn, c.zk.root, scheme)
			if err != nil {
				return hintNoAuth(err, "the fleet's nodes are writable by its operator only; pass the operator's --zk-auth-file")
			}
			until := time.UnixMilli(res.ReservedUntilMs).UTC()
			fmt.Fprintf(c.stdout, "recovered root %s (datacenters %s kept; marker %s): %d slot nodes raised to %s, %d already above it, %d made, %d damaged rewritten; slots serve again from then on, about %v from now\n",
				c.zk.root, res.Owned, res.Marker, res.Raised, until.Format(msTime), res.Kept, len(res.Made), len(res.Rewritten),
				time.Until(until).Round(time.Second))
			return nil
		})
}
