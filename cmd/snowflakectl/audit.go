package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/worker/resp"
)

// auditShown is how many findings of each kind are listed; the counts are
// whole.
const auditShown = 20

// auditID is one ID a finding names, with its fields.
type auditID struct {
	ID         int64  `json:"id"`
	Count      int    `json:"count,omitempty"`
	Slot       string `json:"slot"`
	Time       string `json:"time"`
	Datacenter int    `json:"datacenter"`
}

// auditBad is a value that is no ID of the format.
type auditBad struct {
	Line  int    `json:"line"`
	Value string `json:"value"`
	Why   string `json:"why"`
}

// slotCount is how many IDs of one slot the input holds.
type slotCount struct {
	Slot  string `json:"slot"`
	IDs   int    `json:"ids"`
	First string `json:"first"`
	Last  string `json:"last"`
}

// auditReport is what audit found; --json prints it.
type auditReport struct {
	IDs          int         `json:"ids"`
	Duplicates   []auditID   `json:"duplicates"`
	DuplicateIDs int         `json:"duplicate_ids"`
	Outside      []auditID   `json:"outside_fleet"`
	OutsideIDs   int         `json:"outside_fleet_ids"`
	Impossible   []auditBad  `json:"impossible"`
	Impossibles  int         `json:"impossible_values"`
	PerSlot      []slotCount `json:"per_slot"`
	// With a history (--history): the IDs in no tenure of the fleet (a
	// finding), and how many fell in a tenure, before the recorded
	// history, or in a span a restore lost.
	NoTenure    []auditID `json:"no_tenure,omitempty"`
	NoTenureIDs int       `json:"no_tenure_ids"`
	InTenureIDs int       `json:"in_tenure_ids"`
	BeforeIDs   int       `json:"before_history_ids"`
	LostSpanIDs int       `json:"lost_to_restore_ids"`
	// Overlaps are the history's own finding: two tenures of a slot that
	// intersect (the lease never writes them: two holders at once).
	Overlaps   []auditOverlap `json:"overlapping_tenures,omitempty"`
	OverlapsN  int            `json:"overlapping_tenures_count"`
	NotChecked []string       `json:"not_checked"`
}

// auditOverlap is two tenures of one slot that share timestamps.
type auditOverlap struct {
	Slot string      `json:"slot"`
	From string      `json:"from"`
	To   string      `json:"to"`
	A    tree.Tenure `json:"a"`
	B    tree.Tenure `json:"b"`
}

func (r auditReport) findings() int {
	return r.DuplicateIDs + r.OutsideIDs + r.Impossibles + r.NoTenureIDs + r.OverlapsN
}

// auditCommand is snowflakectl audit: the IDs of a table checked for IDs
// issued twice, IDs of datacenters outside the fleet, and values no ID can
// be.
func (c *ctl) auditCommand() *ffcli.Command {
	fs := newFlagSet("audit")
	column := fs.String("column", "", "read this CSV `column`: its 1-based number, or its header's name (the first row is then the header); without it, one ID per line")
	dcs := fs.String("datacenters", "", "the datacenter `ranges` the fleet owns, such as 0-3,8: an ID of another datacenter is a finding (default: the history's, or not checked)")
	histFile := fs.String("history", "", "place every ID in its slot's history from this `file` (snowflakectl history export): an ID in no tenure of the fleet is a finding")
	asJSON := fs.Bool("json", false, "print one JSON object: ids, duplicates, outside_fleet, impossible, no_tenure, overlapping_tenures, per_slot, not_checked (and the counts)")
	return c.command(fs, "[--column N|NAME] [--datacenters RANGES] [--history FILE] [--json] [FILE|-]",
		"check a table's IDs (a file or stdin): issued twice, outside the fleet's datacenters, impossible, in no tenure, overlapping tenures; exit 1 on any",
		"Reads IDs, one per line or one column of a CSV file (--column), from FILE or\n"+
			"stdin (- or none), and reports IDs issued twice, IDs of datacenters outside\n"+
			"the fleet's (--datacenters: the ranges snowflakectl fleets prints), values no\n"+
			"ID can be (not a number, negative, past the end of the ID space on\n"+
			"2080-07-10, or stamped more than a day ahead of now), and the IDs per slot.\n"+
			"With --history (snowflakectl history export), every ID is placed in its\n"+
			"slot's history: one no holder of the fleet issued (in no tenure) is a\n"+
			"finding; the IDs in a tenure, before the history and in spans a restore\n"+
			"lost are counted; two tenures of a slot that share timestamps (two holders\n"+
			"at once) are a finding too.\n"+
			"Exits 1 on any finding, 0 when there is none. Memory: the IDs are sorted in\n"+
			"place, about 21 bytes per ID from a file (206 MB for 10 million), about 30\n"+
			"from stdin (the array grows: 300 MB).",
		func(_ context.Context, args []string) error {
			if len(args) > 1 {
				return usagef("give one FILE (or - for stdin), not %d", len(args))
			}
			var owned tree.DCSet
			if *dcs != "" {
				var err error
				if owned, err = tree.ParseDCSet(*dcs); err != nil {
					return usagef("--datacenters: %v", err)
				}
			}
			var hist *historyFile
			if *histFile != "" {
				h, err := readHistoryFile(*histFile)
				if err != nil {
					return usage(err)
				}
				hist = &h
				if owned == 0 {
					owned = h.owned()
				}
			}
			in, name, size := c.in.r, "stdin", int64(0)
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return usage(err)
				}
				defer f.Close()
				in, name = f, args[0]
				if st, err := f.Stat(); err == nil {
					size = st.Size()
				}
			}
			// A file's size bounds its IDs (a short form and its newline are 14
			// bytes, a decimal ID up to 20): the slice is made once, never grown.
			ids, bad, n, err := readIDs(in, *column, make([]int64, 0, size/14+1))
			if err != nil {
				err = fmt.Errorf("%s: %w", name, err)
				if errors.Is(err, errNoColumn) {
					return usage(err)
				}
				return err
			}
			rep := audit(ids, owned, hist)
			if bad != nil {
				rep.Impossible = bad
			}
			rep.Impossibles = n
			if *asJSON {
				enc := json.NewEncoder(c.stdout)
				enc.SetIndent("", "  ")
				_ = enc.Encode(rep)
			} else {
				rep.print(c.stdout, name, owned)
			}
			if rep.findings() > 0 {
				return exitStatus(exitFailure) // the report lists them
			}
			return nil
		})
}

// errNoColumn: --column names a header the CSV file does not have.
var errNoColumn = errors.New("no such column")

// readIDs reads every ID of r (one a line, or the column given of a CSV),
// and the values that are no ID (the first auditShown, and their count).
func readIDs(r io.Reader, column string, ids []int64) (_ []int64, bad []auditBad, nbad int, err error) {
	latest := time.Now().Add(24 * time.Hour).UnixMilli()
	take := func(line int, s string) {
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		id, why := parseAuditID(s, latest)
		if why != "" {
			nbad++
			if len(bad) < auditShown {
				bad = append(bad, auditBad{Line: line, Value: s, Why: why})
			}
			return
		}
		ids = append(ids, id)
	}
	if column == "" {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for line := 1; sc.Scan(); line++ {
			// The common line, a decimal ID, is read without a string.
			if id, ok := decimalID(sc.Bytes(), latest); ok {
				ids = append(ids, id)
				continue
			}
			take(line, sc.Text())
		}
		return ids, bad, nbad, sc.Err()
	}
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.FieldsPerRecord, cr.ReuseRecord = -1, true
	idx, byName := 0, false
	if n, err := strconv.Atoi(column); err == nil && n >= 1 {
		idx = n - 1
	} else {
		byName = true
	}
	for line := 1; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, 0, err
		}
		if line == 1 && byName {
			idx = slices.Index(rec, column)
			if idx < 0 {
				return nil, nil, 0, fmt.Errorf("%w %q in the header %q", errNoColumn, column, strings.Join(rec, ","))
			}
			continue
		}
		if idx >= len(rec) {
			take(line, "")
			continue
		}
		if line == 1 {
			if _, why := parseAuditID(strings.TrimSpace(rec[idx]), latest); why != "" {
				continue // a header row
			}
		}
		take(line, rec[idx])
	}
	return ids, bad, nbad, nil
}

// decimalID reads b as a plain decimal ID of the format, stamped no later
// than latest; ok false for anything else, which parseAuditID then reads
// and names.
func decimalID(b []byte, latest int64) (int64, bool) {
	id, ok := resp.ParseInt(b)
	if !ok || id < 0 {
		return 0, false
	}
	f, err := snowflake.Decode(id)
	return id, err == nil && f.UnixMs <= latest
}

// parseAuditID reads one ID, or says why s is none: an ID is a decimal or
// a short form; one past the format's end, or stamped after latest (no
// fleet reserves that far), is impossible.
func parseAuditID(s string, latest int64) (int64, string) {
	if u, err := strconv.ParseUint(s, 10, 64); err == nil && u > math.MaxInt64 {
		return 0, "past the end of the ID space (63 bits; the last ID is of 2080-07-10T17:30:30.208Z)"
	}
	id, err := snowflake.ParseID(s)
	if err != nil {
		return 0, "not an ID: " + err.Error()
	}
	if id < 0 {
		return 0, "negative: no ID is"
	}
	if f, _ := snowflake.Decode(id); f.UnixMs > latest {
		return 0, fmt.Sprintf("stamped %s, more than a day ahead of now: no fleet reserves that far", time.UnixMilli(f.UnixMs).UTC().Format(msTime))
	}
	return id, ""
}

// audit sorts ids in place and counts, in one pass, the IDs seen twice,
// those of datacenters outside owned (when given) and the IDs per slot.
func audit(ids []int64, owned tree.DCSet, hist *historyFile) auditReport {
	rep := auditReport{IDs: len(ids), Duplicates: []auditID{}, Outside: []auditID{}, Impossible: []auditBad{}, PerSlot: []slotCount{}}
	if hist == nil {
		rep.NotChecked = append(rep.NotChecked, "tenures: whether a holder of this fleet issued each ID (give --history, from snowflakectl history export)")
	} else {
		rep.NoTenure = []auditID{}
		rep.overlaps(*hist)
	}
	if owned == 0 {
		rep.NotChecked = append(rep.NotChecked, "datacenters: give --datacenters")
	}
	slices.Sort(ids)
	type span struct {
		n           int
		first, last int64
	}
	perSlot := map[snowflake.Slot]*span{}
	for i := 0; i < len(ids); {
		id := ids[i]
		j := i + 1
		for j < len(ids) && ids[j] == id {
			j++
		}
		f, _ := snowflake.Decode(id)
		s := snowflake.Slot{Datacenter: f.Datacenter, Machine: f.Machine}
		a := auditID{ID: id, Slot: s.String(), Time: time.UnixMilli(f.UnixMs).UTC().Format(msTime), Datacenter: f.Datacenter}
		if j-i > 1 {
			rep.DuplicateIDs++
			if len(rep.Duplicates) < auditShown {
				a.Count = j - i
				rep.Duplicates = append(rep.Duplicates, a)
				a.Count = 0
			}
		}
		outside := owned != 0 && !owned.Has(f.Datacenter)
		if outside {
			rep.OutsideIDs++
			if len(rep.Outside) < auditShown {
				rep.Outside = append(rep.Outside, a)
			}
		}
		if hist != nil && !outside {
			rep.place(hist.of(s), f.UnixMs, a, j-i)
		}
		sp := perSlot[s]
		if sp == nil {
			sp = &span{first: f.UnixMs}
			perSlot[s] = sp
		}
		sp.n += j - i
		sp.last = f.UnixMs // ascending within a slot: IDs of one slot sort by time
		i = j
	}
	for s, sp := range perSlot {
		rep.PerSlot = append(rep.PerSlot, slotCount{Slot: s.String(), IDs: sp.n,
			First: time.UnixMilli(sp.first).UTC().Format(msTime), Last: time.UnixMilli(sp.last).UTC().Format(msTime)})
	}
	slices.SortFunc(rep.PerSlot, func(a, b slotCount) int { return strings.Compare(a.Slot, b.Slot) })
	return rep
}

// place counts n copies of the ID a, of timestamp ms, where h places it.
func (r *auditReport) place(h tree.History, ms int64, a auditID, n int) {
	switch _, where := h.Place(ms); where {
	case tree.InTenure:
		r.InTenureIDs += n
	case tree.BeforeHistory:
		r.BeforeIDs += n
	case tree.LostSpan:
		r.LostSpanIDs += n
	default:
		r.NoTenureIDs += n
		if len(r.NoTenure) < auditShown {
			r.NoTenure = append(r.NoTenure, a)
		}
	}
}

// overlaps finds the tenures of the history that intersect, slot by slot.
func (r *auditReport) overlaps(h historyFile) {
	names := slices.Sorted(maps.Keys(h.Slots))
	for _, name := range names {
		for _, o := range h.Slots[name].Overlaps() {
			r.OverlapsN++
			if len(r.Overlaps) < auditShown {
				r.Overlaps = append(r.Overlaps, auditOverlap{Slot: name,
					From: time.UnixMilli(o.FromMs).UTC().Format(msTime), To: time.UnixMilli(o.ToMs).UTC().Format(msTime), A: o.A, B: o.B})
			}
		}
	}
}

// print writes the report for a person: one line per finding, then the
// IDs per slot, then what was not checked.
func (r auditReport) print(w io.Writer, name string, owned tree.DCSet) {
	fmt.Fprintf(w, "audit: %d IDs read from %s; %d finding(s): %d issued twice, %d outside the fleet, %d impossible, %d in no tenure, %d overlapping tenures\n",
		r.IDs, name, r.findings(), r.DuplicateIDs, r.OutsideIDs, r.Impossibles, r.NoTenureIDs, r.OverlapsN)
	for _, d := range r.Duplicates {
		fmt.Fprintf(w, "DUPLICATE %d ×%d (%s, %s)\n", d.ID, d.Count, d.Slot, d.Time)
	}
	more(w, r.DuplicateIDs, len(r.Duplicates))
	for _, o := range r.Outside {
		fmt.Fprintf(w, "OUTSIDE %d (%s, %s): datacenter %d is not the fleet's (%s)\n", o.ID, o.Slot, o.Time, o.Datacenter, owned)
	}
	more(w, r.OutsideIDs, len(r.Outside))
	for _, b := range r.Impossible {
		fmt.Fprintf(w, "IMPOSSIBLE line %d %q: %s\n", b.Line, b.Value, b.Why)
	}
	more(w, r.Impossibles, len(r.Impossible))
	for _, o := range r.NoTenure {
		fmt.Fprintf(w, "NO TENURE %d (%s, %s): no holder of this fleet issued it (forged, another fleet's, or past a confirmed ceiling; snowflakectl whois %d)\n", o.ID, o.Slot, o.Time, o.ID)
	}
	more(w, r.NoTenureIDs, len(r.NoTenure))
	for _, o := range r.Overlaps {
		fmt.Fprintf(w, "OVERLAP %s %s..%s: tenures %s (%s pid %d) and %s (%s pid %d) share these timestamps: two holders at once, either may have issued an ID of them\n",
			o.Slot, o.From, o.To, o.A.Lease, o.A.Host, o.A.PID, o.B.Lease, o.B.Host, o.B.PID)
	}
	more(w, r.OverlapsN, len(r.Overlaps))
	if r.NoTenure != nil {
		fmt.Fprintf(w, "history: %d in a holder's tenure, %d before the recorded history, %d in spans a restore lost, %d in no tenure\n",
			r.InTenureIDs, r.BeforeIDs, r.LostSpanIDs, r.NoTenureIDs)
	}
	if len(r.PerSlot) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SLOT\tIDS\tFIRST\tLAST")
		for _, s := range r.PerSlot {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.Slot, s.IDs, s.First, s.Last)
		}
		tw.Flush()
	}
	for _, n := range r.NotChecked {
		fmt.Fprintf(w, "not checked: %s\n", n)
	}
}

func more(w io.Writer, all, shown int) {
	if all > shown {
		fmt.Fprintf(w, "… and %d more\n", all-shown)
	}
}
