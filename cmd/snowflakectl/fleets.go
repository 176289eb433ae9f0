package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

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
	// Untrusted says why the root's ACL is not one a fleet's operator made
	// (the world may write it, or no digest identity administers it): such
	// a root is listed but not counted in overlaps, unless --zk-insecure.
	Untrusted string `json:"untrusted,omitempty"`
}

// fleetsReport is the --json output.
type fleetsReport struct {
	Fleets   []fleetRow `json:"fleets"`
	Overlaps []string   `json:"overlaps"`
	// Failed are the ensembles that could not be scanned whole.
	Failed []string `json:"failed"`
	// Unreadable are the subtrees (ensemble + path) ZooKeeper refused the
	// scan: a fleet in them went unseen (exit 3 when nothing worse).
	Unreadable []string `json:"unreadable"`
	// Skipped are the subtrees (ensemble + path) not entered, as
	// --zk-scan-skip asked.
	Skipped []string `json:"skipped"`
}

// runFleets is snowflakectl fleets: every fleet of the ensembles given, and
// the overlaps between them, in one ensemble or across them (IDs of two
// regions collide as surely as those of two roots in one ensemble).
func runFleets(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("fleets", "[--zk-auth user:password] [--zk-scan-skip PATH]... [--json] ENSEMBLE [ENSEMBLE...]",
		"Lists every fleet root in the ensembles given (each argument one ensemble's\n"+
			"comma-separated host:port list) with the datacenters it owns, and exits 1\n"+
			"when two of them own a datacenter in common, in one ensemble or across\n"+
			"ensembles, or when an ensemble could not be scanned whole; otherwise 3 when\n"+
			"ZooKeeper refused it a subtree (a fleet in it went unseen) that --zk-scan-skip\n"+
			"does not name. Run it with every region's ensemble before opening a region.\n"+
			"A root whose ACL lets the world write, or names no operator identity with\n"+
			"admin, could be anyone's decoy: it is listed as untrusted and not counted,\n"+
			"unless --zk-insecure (fleets made without credentials).")
	var za zkFlags // --zk-auth and --zk-auth-file only: the ensembles are arguments
	fs.StringVar(&za.auth, "zk-auth", "", "ZooKeeper digest auth `user:password` (env SNOWFLAKE_ZK_AUTH); fleet roots are world-readable, so rarely needed")
	fs.StringVar(&za.authFile, "zk-auth-file", "", "`file` holding the ZooKeeper digest credentials, one line user:password, not accessible to others (env SNOWFLAKE_ZK_AUTH_FILE)")
	var zt zkTLSFlags
	zt.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object {fleets, overlaps, failed}")
	scanLimit := fs.Int("scan-limit", tree.DefaultScanLimit, "most znodes read per ensemble (0: no count; --timeout bounds the scan)")
	var ids identityFlags
	ids.registerInsecure(fs, "count roots made without credentials too, whatever their ACL (fleets run with --zk-insecure; env SNOWFLAKE_ZK_INSECURE)")
	var skip scanSkipFlag
	skip.register(fs)
	timeout := fs.Duration("timeout", 30*time.Second, "bound on reaching and scanning each ensemble")
	if rc := parse(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if fs.NArg() == 0 {
		return usageError(stderr, "fleets", "give at least one ensemble (host:port[,host:port...])")
	}
	if err := za.readAuth(); err != nil {
		return usageError(stderr, "fleets", "%v", err)
	}
	if err := zt.check(); err != nil {
		return usageError(stderr, "fleets", "%v", err)
	}
	if *scanLimit < 0 || *timeout <= 0 {
		return usageError(stderr, "fleets", "--scan-limit %d must not be negative and --timeout %v must be positive", *scanLimit, *timeout)
	}
	if err := skip.check(); err != nil {
		return usageError(stderr, "fleets", "%v", err)
	}
	ensembles, err := parseEnsembles(fs.Args())
	if err != nil {
		return usageError(stderr, "fleets", "%v", err)
	}
	rep := scanEnsembles(ensembles, za.auth, zt.files, *scanLimit, skip, *timeout, ids.insecure, stderr)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.print(stdout, len(ensembles))
	}
	switch {
	case len(rep.Overlaps) > 0 || len(rep.Failed) > 0:
		return exitFailure
	case len(rep.Unreadable) > 0:
		return exitUnverified
	}
	return exitOK
}

// scanEnsemble finds the fleets of one ensemble, bounded by timeout.
func scanEnsemble(servers []string, auth string, files tlsfiles.Files, limit int, skip []string, timeout time.Duration) (tree.Scan, error) {
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
		s, err := tree.ScanFleets(conn, limit, skip...)
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
// any order, is scanned once.
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

// scanEnsembles scans each ensemble and reports the fleets found, the
// overlaps between those counted, and what could not be scanned or read,
// each also said on stderr as it is found. Untrusted roots are listed but
// not counted unless insecure.
func scanEnsembles(ensembles [][]string, auth string, files tlsfiles.Files, limit int, skip []string, timeout time.Duration, insecure bool, stderr io.Writer) fleetsReport {
	rep := fleetsReport{Fleets: []fleetRow{}, Overlaps: []string{}, Failed: []string{}, Unreadable: []string{}, Skipped: []string{}}
	var all []tree.FleetRoot
	for _, servers := range ensembles {
		name := strings.Join(servers, ",")
		scan, err := scanEnsemble(servers, auth, files, limit, skip, timeout)
		if err != nil {
			rep.Failed = append(rep.Failed, name)
			fmt.Fprintf(stderr, "snowflakectl fleets: ensemble %s: %v\n", name, err)
			continue
		}
		for _, f := range scan.Fleets {
			row := fleetRow{Ensemble: name, Root: f.Root, Layout: f.Layout, Datacenters: f.Owned.String(), Slots: f.Owned.Slots()}
			if f.Err != nil {
				row.Error = f.Err.Error()
				f.Owned = tree.AllDatacenters // unverifiable: counts as owning all
			}
			if f.Untrusted != "" && !insecure {
				row.Untrusted = f.Untrusted
				rep.Fleets = append(rep.Fleets, row)
				fmt.Fprintf(stderr, "snowflakectl fleets: ensemble %s: %s has a fleet layout marker but %s: not counted (--zk-insecure counts it)\n", name, f.Root, f.Untrusted)
				continue
			}
			rep.Fleets = append(rep.Fleets, row)
			f.Root = name + f.Root
			all = append(all, f)
		}
		for _, p := range scan.Unreadable {
			rep.Unreadable = append(rep.Unreadable, name+p)
			fmt.Fprintf(stderr, "snowflakectl fleets: ensemble %s: %s is not readable to us (its ACL): a fleet in it went unseen; grant read access (--zk-auth), or name it with --zk-scan-skip if no fleet can be in it\n", name, p)
		}
		for _, p := range scan.Skipped {
			rep.Skipped = append(rep.Skipped, name+p)
			fmt.Fprintf(stderr, "snowflakectl fleets: ensemble %s: %s skipped by operator (--zk-scan-skip): a fleet in it is not checked\n", name, p)
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
		if r.Untrusted != "" {
			dcs += " (untrusted, not counted)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", r.Ensemble, r.Root, r.Layout, dcs, r.Slots)
	}
	tw.Flush()
	for _, o := range rep.Overlaps {
		fmt.Fprintf(stdout, "OVERLAP: %s\n", o)
	}
	fmt.Fprintf(stdout, "%d fleet(s) in %d ensemble(s); %d overlap(s)", len(rep.Fleets), n-len(rep.Failed), len(rep.Overlaps))
	if len(rep.Unreadable) > 0 {
		fmt.Fprintf(stdout, "; %d unreadable subtree(s): scope not verified", len(rep.Unreadable))
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintf(stdout, "; %d skipped by operator", len(rep.Skipped))
	}
	fmt.Fprintln(stdout)
}
