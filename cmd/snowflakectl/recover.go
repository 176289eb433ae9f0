package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// runRecover is snowflakectl recover: after ZooKeeper was restored from a
// backup, it raises every slot node past anything the fleet could have
// issued since, keeping the root's datacenters.
func runRecover(args []string, in input, stdout, stderr io.Writer) int {
	fs := newFlagSet("recover", "[--yes] [--zk HOST:PORT,...] [--zk-root /snowflake]",
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
			"terminal --yes is required.")
	var z zkFlags
	z.register(fs)
	var ids identityFlags
	ids.register(fs, false)
	yes := fs.Bool("yes", false, "do not ask for confirmation (for scripts)")
	timeout := fs.Duration("timeout", 60*time.Second, "bound on reaching ZooKeeper and writing every slot node")
	if rc := parse(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "recover", "unexpected argument %q", fs.Arg(0))
	}
	servers, err := z.check()
	if err != nil {
		return usageError(stderr, "recover", "%v", err)
	}
	scheme, given, err := ids.scheme(z.auth, false)
	if err != nil {
		return usageError(stderr, "recover", "%v", err)
	}
	if *timeout <= 0 {
		return usageError(stderr, "recover", "--timeout %v must be positive", *timeout)
	}
	if !*yes && !in.terminal {
		return usageError(stderr, "recover", "%v", errNoTerminal)
	}
	// Nothing on stdout says what recover does before it has done it: the
	// question says what it will do; the summary comes after the last write.
	if !*yes && !in.confirm(stdout, stderr, "recover", fmt.Sprintf(
		"recover %s on %s will raise every slot node to now + the root's bound; every slot's next holder waits that long. Run this only after restoring ZooKeeper from a backup.",
		z.root, strings.Join(servers, ","))) {
		return exitFailure
	}
	conn, err := z.dial(servers, min(*timeout, 10*time.Second))
	if err != nil {
		fmt.Fprintf(stderr, "snowflakectl recover: %v\n", err)
		return exitFailure
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if !given {
		if scheme, err = tree.FleetACLFromTree(conn, z.root, z.auth); err != nil {
			fmt.Fprintf(stderr, "snowflakectl recover: %v\n", err)
			return exitFailure
		}
	}
	res, err := tree.RecoverRoot(ctx, conn, z.root, scheme)
	if err != nil {
		fmt.Fprintf(stderr, "snowflakectl recover: %v\n", err)
		if errors.Is(err, zk.ErrNoAuth) {
			fmt.Fprintln(stderr, "snowflakectl recover: the fleet's nodes are writable by its operator only; pass the operator's --zk-auth-file")
		}
		return exitFailure
	}
	until := time.UnixMilli(res.ReservedUntilMs).UTC()
	fmt.Fprintf(stdout, "recovered root %s (datacenters %s kept; marker %s): %d slot nodes raised to %s, %d already above it, %d made, %d damaged rewritten; slots serve again from then on, about %v from now\n",
		z.root, res.Owned, res.Marker, res.Raised, until.Format(msTime), res.Kept, len(res.Made), len(res.Rewritten),
		time.Until(until).Round(time.Second))
	return exitOK
}
