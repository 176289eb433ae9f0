package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// whoisAnswer is where one ID falls in its slot's history; --json prints
// one per line.
type whoisAnswer struct {
	Value    string       `json:"value"`
	ID       int64        `json:"id,omitempty"`
	Slot     string       `json:"slot,omitempty"`
	Time     string       `json:"time,omitempty"`
	Sequence int          `json:"sequence"`
	Where    string       `json:"where"` // in_tenure, before_history, lost_to_restore, no_tenure, outside_fleet, impossible
	Why      string       `json:"why,omitempty"`
	Tenure   *tree.Tenure `json:"tenure,omitempty"`
}

// finding: what whois exits 1 for (an ID this fleet did not issue).
func (a whoisAnswer) finding() bool {
	return a.Where == "no_tenure" || a.Where == "outside_fleet" || a.Where == "impossible"
}

// whoisCommand is snowflakectl whois: which process issued each ID.
func (c *ctl) whoisCommand() *ffcli.Command {
	fs := newFlagSet("whois")
	c.zk.register(fs)
	file := fs.String("history", "", "place the IDs by this `file` (snowflakectl history export) instead of ZooKeeper: offline")
	asJSON := fs.Bool("json", false, "print one JSON object per ID: value, id, slot, time, sequence, where, why, tenure")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on reaching ZooKeeper and reading every slot node")
	return c.command(fs, "[--zk HOST:PORT,...] [--history FILE] [--json] ID... (or IDs on stdin, one per line, with -)",
		"which process issued each ID: its holder's tenure in the slot's history",
		"For each ID (decimal or short form), one line: the ID, the process that\n"+
			"issued it (host and pid first, then program, version and kind, its lease\n"+
			"node and tenure), the slot and the time; or why there is none: before the\n"+
			"recorded history (older than what the slot node keeps), in a span a\n"+
			"restore lost (recover recorded it; holders unknown), in no tenure of this\n"+
			"fleet (not issued here: forged, from another fleet sharing the datacenter,\n"+
			"or issued past a confirmed ceiling), outside the fleet's datacenters, or\n"+
			"impossible (past the end of the ID space on 2080-07-10, or ahead of any\n"+
			"reservation). Exits 1 when an ID is in no tenure, outside or impossible.",
		func(_ context.Context, args []string) error {
			if len(args) == 0 {
				return usagef("no ID given (pass IDs as arguments, or - to read them from stdin)")
			}
			if *timeout <= 0 {
				return usagef("--timeout %v must be positive", *timeout)
			}
			if len(args) == 1 && args[0] == "-" {
				var err error
				if args, err = readLines(c.in.r); err != nil {
					return fmt.Errorf("reading stdin: %w", err)
				}
			}
			h, err := c.history(*file, *timeout)
			if err != nil {
				return err
			}
			w := bufio.NewWriter(c.stdout)
			defer w.Flush()
			enc := json.NewEncoder(w)
			var status error
			latest := time.Now().Add(24 * time.Hour).UnixMilli()
			for _, s := range args {
				a := whois(h, s, latest)
				if a.finding() {
					status = exitStatus(exitFailure)
				}
				if *asJSON {
					_ = enc.Encode(a)
					continue
				}
				fmt.Fprintln(w, a.line())
			}
			return status
		})
}

// whois places the ID s in h.
func whois(h historyFile, s string, latest int64) whoisAnswer {
	a := whoisAnswer{Value: s}
	id, why := parseAuditID(strings.TrimSpace(s), latest)
	if why != "" {
		a.Where, a.Why = "impossible", why
		return a
	}
	f, _ := snowflake.Decode(id)
	a.ID, a.Slot, a.Time, a.Sequence = id, f.Slot().String(), f.Time().Format(msTime), f.Sequence
	if owned := h.owned(); owned != 0 && !owned.Has(f.Datacenter) {
		a.Where, a.Why = "outside_fleet", fmt.Sprintf("datacenter %d is not the fleet's (%s)", f.Datacenter, owned)
		return a
	}
	t, where := h.of(f.Slot()).Place(f.UnixMs)
	switch where {
	case tree.InTenure:
		a.Where, a.Tenure = "in_tenure", &t
	case tree.BeforeHistory:
		a.Where, a.Why = "before_history", "older than the history the slot node keeps"
	case tree.LostSpan:
		a.Where, a.Tenure = "lost_to_restore", &t
		a.Why = "in a span a restore from a backup lost (" + strings.TrimPrefix(t.Lease, "recover:") + "): issued by holders nobody recorded, or never"
	default:
		a.Where, a.Why = "no_tenure", "not issued by this fleet's holders of the slot: forged, from another fleet sharing the datacenter, or past a confirmed ceiling"
	}
	return a
}

// line is the answer for a person: the ID, then the holder's host and pid.
func (a whoisAnswer) line() string {
	switch {
	case a.Where == "impossible":
		return fmt.Sprintf("%s  impossible: %s", a.Value, a.Why)
	case a.Where == "in_tenure":
		t := a.Tenure
		released := ""
		if t.Released {
			released = ", released"
		}
		return fmt.Sprintf("%d  %s pid %d  %s %s %s  %s  %s seq %d  lease %s, tenure %s..%s%s",
			a.ID, orDash(t.Host), t.PID, orDash(t.Program), orDash(t.Version), orDash(t.Kind), a.Slot, a.Time, a.Sequence,
			t.Lease, msString(t.FloorMs), msString(t.CeilingMs), released)
	}
	return fmt.Sprintf("%d  -  %s  %s seq %d  %s: %s", a.ID, a.Slot, a.Time, a.Sequence, strings.ReplaceAll(a.Where, "_", " "), a.Why)
}

func msString(ms int64) string { return time.UnixMilli(ms).UTC().Format(msTime) }

// readLines reads the non-blank lines of r.
func readLines(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if s := strings.TrimSpace(sc.Text()); s != "" {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}
