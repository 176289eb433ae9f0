//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// row is one scenario's line in the table.
type row struct {
	Name         string
	IDs          int64
	ClientErrs   int64 // Go client calls that failed after its retries
	DirectErrs   int64 // go-redis calls to one worker each that failed
	Retries      int64 // Go client requests sent again (snowflake_client_retries_total)
	Protocol     int64 // Go client replies rejected as breaking the protocol
	Ceilings     int   // IDs checked against the ceiling polled from their holder
	HolderChecks int   // listings of leases/ checked against the workers' holders
	Duplicates   int
	Violations   int
	Recovery     time.Duration // from the fault; 0: serving never stopped
	Limit        time.Duration
	Notes        string
	Errors       map[string]int
	Examples     map[string]string
	Failed       bool
}

type report struct {
	rows  []row
	start time.Time
	total int
}

func (r *report) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | IDs collected | Go client: failed calls / retries / protocol errors | direct errors (go-redis, per worker) | duplicates | order violations | IDs checked against a polled ceiling | holder checks against leases/ | recovery from the fault (bound) | notes |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	var ids, cerr, derr, retries, proto int64
	var dups, viol, ceil int
	for _, x := range r.rows {
		rec := "never stopped"
		if x.Recovery > 0 {
			rec = fmt.Sprintf("%.1f s (%.0f s)", x.Recovery.Seconds(), x.Limit.Seconds())
		}
		name := x.Name
		if x.Failed {
			name += " **FAILED**"
		}
		fmt.Fprintf(&b, "| %s | %d | %d / %d / %d | %d | %d | %d | %d | %d | %s | %s |\n", name, x.IDs, x.ClientErrs, x.Retries, x.Protocol,
			x.DirectErrs, x.Duplicates, x.Violations, x.Ceilings, x.HolderChecks, rec, x.Notes)
		ids += x.IDs
		cerr += x.ClientErrs
		derr += x.DirectErrs
		retries += x.Retries
		proto += x.Protocol
		dups += x.Duplicates
		viol += x.Violations
		ceil += x.Ceilings
	}
	fmt.Fprintf(&b, "| **all** (%d IDs checked in all, %s) | %d | %d / %d / %d | %d | %d | %d | %d | | | |\n",
		r.total, time.Since(r.start).Round(time.Second), ids, cerr, retries, proto, derr, dups, viol, ceil)
	b.WriteString("\nErrors seen, by kind:\n\n")
	for _, x := range r.rows {
		if len(x.Errors) == 0 {
			continue
		}
		keys := make([]string, 0, len(x.Errors))
		for k := range x.Errors {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "- %s:", x.Name)
		for _, k := range keys {
			fmt.Fprintf(&b, " `%s` ×%d;", k, x.Errors[k])
		}
		b.WriteString("\n")
	}
	b.WriteString("\nOne message of each kind:\n\n")
	seen := map[string]bool{}
	for _, x := range r.rows {
		keys := make([]string, 0, len(x.Examples))
		for k := range x.Examples {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				fmt.Fprintf(&b, "- `%s` (first in %s)\n", x.Examples[k], x.Name)
			}
		}
	}
	return b.String()
}

// write prints the table and saves it in $TMPDIR (or SNOWFLEET_IT_REPORT).
func (r *report) write() (string, error) {
	path := os.Getenv("SNOWFLEET_IT_REPORT")
	if path == "" {
		path = filepath.Join(os.TempDir(), fmt.Sprintf("snowfleet-integration-%s.md", time.Now().UTC().Format("20060102T150405Z")))
	}
	md := r.markdown()
	fmt.Printf("\n%s\n", md)
	return path, os.WriteFile(path, []byte(md), 0o644)
}
