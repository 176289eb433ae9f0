package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// runSecure is snowflakectl secure: it re-ACLs an existing fleet's tree to
// the fleet's scheme (the operator owns it, the workers do what a worker
// does, the world reads), saying what it changed. Run again, it changes
// nothing.
func runSecure(args []string, in input, stdout, stderr io.Writer) int {
	fs := newFlagSet("secure", "--zk-auth-file OPERATOR --zk-worker-auth-file WORKER [--yes] [--zk HOST:PORT,...] [--zk-root /snowflake]",
		"Sets the ACL of every node of the fleet's tree (the root, leases/, slots/,\n"+
			"standby/, the 1,024 slot nodes, and the lease and standby nodes that exist)\n"+
			"to the fleet's scheme: the operator (--zk-auth-file) owns every node, the\n"+
			"workers (--zk-worker-auth-file; only its digest id is written) may create and\n"+
			"delete in leases/ and standby/ and read and write the slot nodes, the world\n"+
			"reads. For a fleet made without credentials (--zk-insecure), or by an older\n"+
			"build: workers given credentials refuse to serve from a tree the world can\n"+
			"write. Makes standby/ if it is missing. Reads and writes no node's data; a\n"+
			"node already right is left alone, so a second run changes nothing. Asks for\n"+
			"confirmation; --yes skips it, and without a terminal --yes is required.")
	var z zkFlags
	z.register(fs)
	var ids identityFlags
	ids.register(fs, false)
	yes := fs.Bool("yes", false, "do not ask for confirmation (for scripts)")
	timeout := fs.Duration("timeout", 60*time.Second, "bound on reaching ZooKeeper and setting every ACL")
	if rc := parse(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "secure", "unexpected argument %q", fs.Arg(0))
	}
	servers, err := z.check()
	if err != nil {
		return usageError(stderr, "secure", "%v", err)
	}
	if z.auth == "" {
		return usageError(stderr, "secure", "give the operator's --zk-auth-file and the workers' --zk-worker-auth-file")
	}
	scheme, _, err := ids.scheme(z.auth, true)
	if err != nil {
		return usageError(stderr, "secure", "%v", err)
	}
	if *timeout <= 0 {
		return usageError(stderr, "secure", "--timeout %v must be positive", *timeout)
	}
	if !*yes && !in.terminal {
		return usageError(stderr, "secure", "%v", errNoTerminal)
	}
	fmt.Fprintf(stdout, "secure %s on %s: every node's ACL becomes the fleet's: operator %s all, workers %s what a worker does, world read\n",
		z.root, strings.Join(servers, ","), user(scheme.OperatorID()), user(scheme.WorkerID()))
	if !*yes && !in.confirm(stdout, stderr, "secure", "Workers without the workers' credentials can no longer write the tree.") {
		return exitFailure
	}
	conn, err := z.dial(servers, min(*timeout, 10*time.Second))
	if err != nil {
		fmt.Fprintf(stderr, "snowflakectl secure: %v\n", err)
		return exitFailure
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	// Lease and standby nodes made before WorkerNodeACL carry the workers'
	// identity with admin: only that identity can bring them over.
	if ids.worker != z.auth {
		if err := zkconn.AddAuth(ctx, conn, ids.worker); err != nil {
			fmt.Fprintf(stderr, "snowflakectl secure: the workers' identity: %v\n", err)
			return exitFailure
		}
	}
	res, err := tree.SecureTree(ctx, conn, z.root, scheme)
	for _, p := range res.Made {
		fmt.Fprintf(stdout, "made %s\n", p)
	}
	for i, c := range res.Changed {
		if i == 8 && len(res.Changed) > 9 {
			fmt.Fprintf(stdout, "... and %d more\n", len(res.Changed)-8)
			break
		}
		fmt.Fprintf(stdout, "%s: %s -> %s\n", c.Path, tree.FormatACL(c.Was), tree.FormatACL(c.Now))
	}
	if err != nil {
		fmt.Fprintf(stderr, "snowflakectl secure: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "secured root %s: %d node(s) changed, %d made, %d checked\n", z.root, len(res.Changed), len(res.Made), res.Checked)
	return exitOK
}

// user is the user of a digest id user:hash.
func user(id string) string {
	u, _, _ := strings.Cut(id, ":")
	return u
}
