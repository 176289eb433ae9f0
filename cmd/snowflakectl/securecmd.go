package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// secureCommand is snowflakectl secure: it re-ACLs an existing fleet's
// tree to the fleet's scheme (the operator owns it, the workers do what a
// worker does, the world reads), saying what it changed. Run again, it
// changes nothing.
func (c *ctl) secureCommand() *ffcli.Command {
	fs := newFlagSet("secure")
	c.zk.register(fs)
	c.ids.register(fs, false)
	yes := fs.Bool("yes", false, "do not ask for confirmation (for scripts)")
	timeout := fs.Duration("timeout", 60*time.Second, "bound on reaching ZooKeeper and setting every ACL")
	return c.command(fs, "--zk-auth-file OPERATOR --zk-worker-auth-file WORKER [--yes] [--zk HOST:PORT,...] [--zk-root /snowflake]",
		"set the ACLs of a fleet's tree to the operator/worker/world scheme (asks first)",
		"Sets the ACL of every node of the fleet's tree (the root, leases/, slots/,\n"+
			"standby/, the 1,024 slot nodes, and the lease and standby nodes that exist)\n"+
			"to the fleet's scheme: the operator (--zk-auth-file) owns every node, the\n"+
			"workers (--zk-worker-auth-file; only its digest id is written) may create and\n"+
			"delete in leases/ and standby/ and read and write the slot nodes, the world\n"+
			"reads. For a fleet made without credentials (--zk-insecure), or by an older\n"+
			"build: workers given credentials refuse to serve from a tree the world can\n"+
			"write. Makes standby/ if it is missing. Reads and writes no node's data; a\n"+
			"node already right is left alone, so a second run changes nothing. Asks for\n"+
			"confirmation; --yes skips it, and without a terminal --yes is required.",
		func(ctx context.Context, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			servers, err := c.zk.check()
			if err != nil {
				return usage(err)
			}
			if c.zk.auth == "" {
				return usagef("give the operator's --zk-auth-file and the workers' --zk-worker-auth-file")
			}
			scheme, _, err := c.ids.scheme(c.zk.auth, true)
			if err != nil {
				return usage(err)
			}
			if *timeout <= 0 {
				return usagef("--timeout %v must be positive", *timeout)
			}
			if err := c.mayAsk(*yes); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "secure %s on %s: every node's ACL becomes the fleet's: operator %s all, workers %s what a worker does, world read\n",
				c.zk.root, strings.Join(servers, ","), user(scheme.OperatorID()), user(scheme.WorkerID()))
			if err := c.ask(*yes, "Workers without the workers' credentials can no longer write the tree."); err != nil {
				return err
			}
			conn, ctx, done, err := c.zk.session(ctx, servers, *timeout)
			if err != nil {
				return err
			}
			defer done()
			// Lease and standby nodes made before WorkerNodeACL carry the
			// workers' identity with admin: only that identity can bring
			// them over.
			if c.ids.worker != c.zk.auth {
				if err := zkconn.AddAuth(ctx, conn, c.ids.worker); err != nil {
					return fmt.Errorf("the workers' identity: %w", err)
				}
			}
			res, err := tree.SecureTree(ctx, conn, c.zk.root, scheme)
			c.printSecure(res)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "secured root %s: %d node(s) changed, %d made, %d checked\n", c.zk.root, len(res.Changed), len(res.Made), res.Checked)
			return nil
		})
}

// printSecure says what secure changed (the first eight changes, then a
// count), also when it stopped part-way.
func (c *ctl) printSecure(res tree.SecureResult) {
	for _, p := range res.Made {
		fmt.Fprintf(c.stdout, "made %s\n", p)
	}
	for i, ch := range res.Changed {
		if i == 8 && len(res.Changed) > 9 {
			fmt.Fprintf(c.stdout, "... and %d more\n", len(res.Changed)-8)
			break
		}
		fmt.Fprintf(c.stdout, "%s: %s -> %s\n", ch.Path, tree.FormatACL(ch.Was), tree.FormatACL(ch.Now))
	}
}

// user is the user of a digest id user:hash.
func user(id string) string {
	u, _, _ := strings.Cut(id, ":")
	return u
}
