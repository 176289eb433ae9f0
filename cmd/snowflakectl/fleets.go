package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/cmd/internal/cliflag"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// fleetRow is one fleet found, as printed and as JSON.
type fleetRow struct {
	Ensemble    string `json:"ensemble"`
	Root        string `json:"root"`
	Layout      string `json:"layout"`
	Datacenters string `json:"datacenters"`
	Slots       int    `json:"slots"`
	Error       string `json:"error,omitempty"`
}

// fleetsReport is the --json output.
type fleetsReport struct {
	Fleets   []fleetRow `json:"fleets"`
	Overlaps []string   `json:"overlaps"`
	// Failed are the ensembles whose registry could not be read, or is
	// not protected (its ACL lets the world write, or names no operator).
	Failed []string `json:"failed"`
}

// fleetsCommand is snowflakectl fleets: every fleet of the ensembles
// given, and the overlaps between them, in one ensemble or across them
// (IDs of two regions collide as surely as those of two roots in one
// ensemble).
func (c *ctl) fleetsCommand() *ffcli.Command {
	fs := newFlagSet("fleets")
	// --zk-auth and --zk-auth-file only: the ensembles are arguments.
	fs.StringVar(&c.zk.auth, "zk-auth", "", "ZooKeeper digest auth `user:password` (env SNOWFLAKE_ZK_AUTH); fleet roots are world-readable, so rarely needed")
	fs.StringVar(&c.zk.authFile, "zk-auth-file", "", "`file` holding the ZooKeeper digest credentials, one line user:password, not accessible to others (env SNOWFLAKE_ZK_AUTH_FILE)")
	c.zk.tls.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object {fleets, overlaps, failed}")
	c.ids.registerInsecure(fs, "count roots made without credentials too, whatever their ACL (fleets run with --zk-insecure; env SNOWFLAKE_ZK_INSECURE)")
	var skip scanSkipFlag
	skip.register(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "bound on reaching and reading each ensemble's registry")
	return c.command(fs, "[--zk-auth user:password] [--json] ENSEMBLE [ENSEMBLE...]",
		"list every fleet of the ensembles given; exit 1 on an overlap (the region check)",
		"Lists every fleet registered in the ensembles given (each argument one\n"+
			"ensemble's comma-separated host:port list; the registry is "+tree.RegistryPath+",\n"+
			"written by init) with the datacenters it owns, and exits 1 when two of them\n"+
			"own a datacenter in common, in one ensemble or across ensembles, or when an\n"+
			"ensemble's registry could not be read or is not protected (its ACL lets the\n"+
			"world write, or names no operator identity with admin: anyone could have\n"+
			"registered there), unless --zk-insecure (fleets made without credentials).\n"+
			"Run it with every region's ensemble before opening a region.",
		func(_ context.Context, args []string) error {
			if len(args) == 0 {
				return usagef("give at least one ensemble (host:port[,host:port...])")
			}
			if err := c.zk.readAuth(); err != nil {
				return usage(err)
			}
			if err := c.zk.tls.check(); err != nil {
				return usage(err)
			}
			if *timeout <= 0 {
				return usagef("--timeout %v must be positive", *timeout)
			}
			if err := skip.check(c, "fleets"); err != nil {
				return usage(err)
			}
			ensembles, err := parseEnsembles(args)
			if err != nil {
				return usage(err)
			}
			rep := c.readEnsembles(ensembles, *timeout)
			if *asJSON {
				enc := json.NewEncoder(c.stdout)
				enc.SetIndent("", "  ")
				_ = enc.Encode(rep)
			} else {
				rep.print(c.stdout, len(ensembles))
			}
			if len(rep.Overlaps) > 0 || len(rep.Failed) > 0 {
				return exitStatus(exitFailure) // said in the report, and each failed ensemble on stderr
			}
			return nil
		})
}

// readEnsemble reads the fleet registry of one ensemble, bounded by timeout.
func readEnsemble(servers []string, auth string, files tlsfiles.Files, timeout time.Duration, insecure bool) (tree.Scan, error) {
	conn, err := zklayout.ZKConfig{Servers: servers, Auth: auth, TLS: files, SessionTimeout: min(max(timeout, 2*time.Second), 10*time.Second)}.Dial(nil)
	if err != nil {
		return tree.Scan{}, err
	}
	defer conn.Close()
	type result struct {
		s   tree.Scan
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := tree.ReadRegistry(conn, insecure)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.s, r.err
	case <-time.After(timeout):
		return tree.Scan{}, fmt.Errorf("did not answer within %v (--timeout)", timeout)
	}
}

// parseEnsembles reads the arguments of fleets, one ensemble's
// comma-separated host:port list each, held to the rule every ZooKeeper
// server list is (zklayout.ValidateServers); an ensemble given twice, in
// any order, is read once.
func parseEnsembles(args []string) ([][]string, error) {
	var ensembles [][]string
	seen := map[string]bool{}
	for _, a := range args {
		servers := cliflag.SplitAddrs(a)
		if err := zklayout.ValidateServers(servers); err != nil {
			var ce *configerr.Error
			if errors.As(err, &ce) && ce.Value != nil {
				return nil, fmt.Errorf("ensemble %q: %q %s", a, ce.Value, ce.Reason)
			}
			return nil, fmt.Errorf("ensemble %q lists no host:port", a)
		}
		key := append([]string(nil), servers...)
		sort.Strings(key)
		if k := strings.Join(key, ","); !seen[k] {
			seen[k] = true
			ensembles = append(ensembles, servers)
		}
	}
	return ensembles, nil
}

// readEnsembles reads each ensemble's registry and reports the fleets
// registered, the overlaps between them, and the ensembles whose registry
// could not be read or is not protected, each also said on stderr.
func (c *ctl) readEnsembles(ensembles [][]string, timeout time.Duration) fleetsReport {
	rep := fleetsReport{Fleets: []fleetRow{}, Overlaps: []string{}, Failed: []string{}}
	var all []tree.FleetRoot
	for _, servers := range ensembles {
		name := strings.Join(servers, ",")
		reg, err := readEnsemble(servers, c.zk.auth, c.zk.tls.files, timeout, c.ids.insecure)
		if err != nil {
			rep.Failed = append(rep.Failed, name)
			c.warnf("fleets", "ensemble %s: %v", name, err)
			continue
		}
		for _, f := range reg.Fleets {
			row := fleetRow{Ensemble: name, Root: f.Root, Layout: f.Layout, Datacenters: f.Owned.String(), Slots: f.Owned.Slots()}
			if f.Err != nil {
				row.Error = f.Err.Error()
				f.Owned = tree.AllDatacenters // unverifiable: counts as owning all
			}
			rep.Fleets = append(rep.Fleets, row)
			f.Root = name + f.Root
			all = append(all, f)
		}
	}
	for _, o := range tree.Overlaps(all) {
		rep.Overlaps = append(rep.Overlaps, o.String())
	}
	return rep
}

// print writes the report as a table, its overlaps and a summary line of
// the n ensembles asked for.
func (rep fleetsReport) print(stdout io.Writer, n int) {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENSEMBLE\tROOT\tLAYOUT\tDATACENTERS\tSLOTS")
	for _, r := range rep.Fleets {
		dcs := r.Datacenters
		if r.Error != "" {
			dcs = "(unreadable: " + r.Error + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", r.Ensemble, r.Root, r.Layout, dcs, r.Slots)
	}
	tw.Flush()
	for _, o := range rep.Overlaps {
		fmt.Fprintf(stdout, "OVERLAP: %s\n", o)
	}
	fmt.Fprintf(stdout, "%d fleet(s) in %d ensemble(s); %d overlap(s)", len(rep.Fleets), n-len(rep.Failed), len(rep.Overlaps))
	fmt.Fprintln(stdout)
}
