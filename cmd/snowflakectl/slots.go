package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// readSlotMap reads the slot map, bounded by timeout: go-zookeeper has no
// call timeouts of its own and would wait for an unreachable ensemble.
func (z *zkFlags) readSlotMap(servers []string, timeout time.Duration) (tree.SlotMap, error) {
	conn, err := z.dial(servers, max(timeout, 2*time.Second))
	if err != nil {
		return tree.SlotMap{}, err
	}
	defer conn.Close()
	type result struct {
		m   tree.SlotMap
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := tree.ReadSlotMap(conn, z.root)
		done <- result{m, err}
	}()
	select {
	case r := <-done:
		return r.m, r.err
	case <-time.After(timeout):
		return tree.SlotMap{}, fmt.Errorf("zookeeper %s did not answer within %v (--timeout)", strings.Join(servers, ","), timeout)
	}
}

// slotRow is one slot of the map, as printed and as JSON.
type slotRow struct {
	Slot string `json:"slot"`
	// Held: a live lease node holds the slot; the lease fields are set.
	Held bool `json:"held"`
	// Kind is worker (it serves IDs at Addr) or embedded (a Go program
	// issuing IDs to itself, named by Program); set when held.
	Kind      string     `json:"kind,omitempty"`
	Program   string     `json:"program,omitempty"`
	Addr      string     `json:"addr,omitempty"`
	HTTP      string     `json:"http,omitempty"`
	Host      string     `json:"host,omitempty"`
	PID       int        `json:"pid,omitempty"`
	Version   string     `json:"version,omitempty"`
	LeaseNode string     `json:"lease_node,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	// The slot node's record, when the slot was ever used.
	ReservedUntilMs int64  `json:"reserved_until_ms,omitempty"`
	LastMs          int64  `json:"last_ms,omitempty"`
	UpdatedMs       int64  `json:"updated_ms,omitempty"`
	Writer          string `json:"writer,omitempty"`
	// AheadMs is reserved_until - now; IdleMs is now - last_ms.
	AheadMs *int64 `json:"ahead_ms,omitempty"`
	IdleMs  *int64 `json:"idle_ms,omitempty"`
}

// slotsJSONShape names slotsReport's keys for the help and the README
// (TestSlotsJSONShapeNamesEveryKey holds the three to the struct).
const slotsJSONShape = "{root, now_ms, held, embedded, free, used, datacenters, owned, slots: [...], standbys: [...], damaged: {...}}"

// slotsReport is the --json output.
type slotsReport struct {
	Root  string `json:"root"`
	NowMs int64  `json:"now_ms"`
	Held  int    `json:"held"`
	// Embedded counts the held slots of embedded leases (in Held too).
	Embedded int `json:"embedded"`
	Free     int `json:"free"`
	Used     int `json:"used"`
	// Datacenters are the ranges the fleet owns and Owned their slots:
	// Free counts within them.
	Datacenters string    `json:"datacenters"`
	Owned       int       `json:"owned"`
	Slots       []slotRow `json:"slots"`
	// Standbys are the workers waiting for a slot; while one waits for a
	// range, its holders reserve only --standby-horizon ahead.
	Standbys []tree.StandbyInfo `json:"standbys"`
	// Damaged are the slot nodes that hold no slot record, slot -> why:
	// nobody claims those slots until a valid record is written.
	Damaged map[string]string `json:"damaged,omitempty"`
}

func (c *ctl) slotsCommand() *ffcli.Command {
	fs := newFlagSet("slots")
	c.zk.register(fs)
	all := fs.Bool("all", false, "also list slots used before but not held now")
	asJSON := fs.Bool("json", false, "print one JSON object "+slotsJSONShape)
	timeout := fs.Duration("timeout", 10*time.Second, "bound on reaching ZooKeeper and reading the map")
	return c.command(fs, "[--zk HOST:PORT,...] [--zk-root /snowflake] [--all] [--json]",
		"show the live slot map from ZooKeeper",
		"Shows the live slot map from ZooKeeper: which worker holds which slot, its\n"+
			"reservation and its last issued timestamp, then how many slots are held, and\n"+
			"how many of those in the fleet's datacenters are free. AHEAD is reserved_until - now (how far the holder's\n"+
			"confirmed reservation runs ahead of this machine's clock; negative means it\n"+
			"stopped renewing). IDLE is now - last issued (as of the holder's last renew).\n"+
			"Last, the standbys waiting for a slot (nodes in standby/).",
		func(_ context.Context, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			servers, err := c.zk.check()
			if err != nil {
				return usage(err)
			}
			if *timeout <= 0 {
				return usagef("--timeout %v must be positive", *timeout)
			}
			m, err := c.zk.readSlotMap(servers, *timeout)
			if err != nil {
				return hintNoAuth(fmt.Errorf("read the slot map: %w", err), "the root is not world-readable; pass --zk-auth")
			}
			rep := buildSlotsReport(m, c.zk.root, time.Now(), *all)
			if *asJSON {
				enc := json.NewEncoder(c.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printSlots(c.stdout, rep, strings.Join(servers, ","))
			return nil
		})
}

func buildSlotsReport(m tree.SlotMap, root string, now time.Time, all bool) slotsReport {
	nowMs := now.UnixMilli()
	rep := slotsReport{Root: root, NowMs: nowMs, Held: len(m.Leases), Free: m.Free(), Slots: []slotRow{},
		Datacenters: m.Owned.String(), Owned: m.Owned.Slots(), Standbys: append([]tree.StandbyInfo{}, m.Standbys...)}
	for _, rec := range m.Slots {
		if rec.Holder != "" { // made with the root but never held: not used
			rep.Used++
		}
	}
	for s, why := range m.Damaged {
		if rep.Damaged == nil {
			rep.Damaged = map[string]string{}
		}
		rep.Damaged[s.String()] = why
	}
	held := make(map[snowflake.Slot]bool, len(m.Leases))
	addRecord := func(r *slotRow, s snowflake.Slot) {
		rec, ok := m.Slots[s]
		if !ok {
			return
		}
		ahead, idle := rec.ReservedUntilMs-nowMs, nowMs-rec.LastMs
		r.ReservedUntilMs, r.LastMs, r.UpdatedMs, r.Writer = rec.ReservedUntilMs, rec.LastMs, rec.UpdatedMs, rec.Holder
		r.AheadMs = &ahead
		if rec.LastMs > 0 {
			r.IdleMs = &idle
		}
	}
	for _, l := range m.Leases {
		held[l.Slot] = true
		r := slotRow{Slot: l.Slot.String(), Held: true, Kind: l.Kind, Program: l.Program, Addr: l.Addr, HTTP: l.HTTP,
			Host: l.Host, PID: l.PID, Version: l.Version, LeaseNode: l.Node}
		if l.Kind == zklayout.KindEmbedded {
			rep.Embedded++
		}
		if !l.Since.IsZero() {
			since := l.Since.UTC()
			r.Since = &since
		}
		addRecord(&r, l.Slot)
		rep.Slots = append(rep.Slots, r)
	}
	if all {
		for s, rec := range m.Slots {
			if held[s] || rec.Holder == "" {
				continue
			}
			r := slotRow{Slot: s.String()}
			addRecord(&r, s)
			rep.Slots = append(rep.Slots, r)
		}
	}
	sort.Slice(rep.Slots, func(i, j int) bool { return rep.Slots[i].Slot < rep.Slots[j].Slot })
	return rep
}

func printSlots(w io.Writer, rep slotsReport, servers string) {
	fmt.Fprintf(w, "slot map of %s on %s at %s (AHEAD = reserved_until - now; IDLE = now - last issued)\n",
		rep.Root, servers, time.UnixMilli(rep.NowMs).UTC().Format(msTime))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tKIND\tPROGRAM\tADDR\tHOST\tPID\tHELD SINCE\tRESERVED UNTIL\tAHEAD\tLAST ISSUED\tIDLE")
	for _, r := range rep.Slots {
		kind, program, addr, host, pid, since := "-", "-", "-", "-", "-", "-"
		if r.Held {
			kind, program = orDash(r.Kind), orDash(r.Program)
			addr, host, pid = orDash(r.Addr), orDash(r.Host), fmt.Sprint(r.PID)
			if r.Since != nil {
				since = r.Since.Format(secTime)
			}
		} else {
			addr = "(free)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Slot, kind, program, addr, host, pid, since,
			msOrDash(r.ReservedUntilMs), durOrDash(r.AheadMs, true), msOrDash(r.LastMs), durOrDash(r.IdleMs, false))
	}
	tw.Flush()
	fmt.Fprintf(w, "held %d, free %d (of %d in datacenters %s); %d slots ever used\n", rep.Held, rep.Free, rep.Owned, rep.Datacenters, rep.Used)
	if rep.Embedded > 0 {
		fmt.Fprintf(w, "%d of the held slots are embedded leases: Go programs issuing IDs to themselves (no ID requests go to them)\n", rep.Embedded)
	}
	if len(rep.Damaged) > 0 {
		damaged := make([]string, 0, len(rep.Damaged))
		for s := range rep.Damaged {
			damaged = append(damaged, s)
		}
		sort.Strings(damaged)
		fmt.Fprintf(w, "%d damaged slot nodes hold no slot record; nobody claims them until a valid record is written (see the runbook):\n", len(damaged))
		for _, s := range damaged {
			fmt.Fprintf(w, "  %s: %s\n", s, rep.Damaged[s])
		}
	}
	if len(rep.Standbys) == 0 {
		fmt.Fprintln(w, "no standby waiting")
		return
	}
	fmt.Fprintf(w, "%d standby waiting (their range's holders reserve only --standby-horizon ahead):\n", len(rep.Standbys))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STANDBY\tWAITS FOR\tADDR\tHOST\tPID\tSINCE")
	for _, sb := range rep.Standbys {
		rng := "any slot"
		if sb.Datacenter >= 0 {
			rng = fmt.Sprintf("datacenter %d", sb.Datacenter)
		}
		since := "-"
		if !sb.Since.IsZero() {
			since = sb.Since.UTC().Format(secTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", sb.Node, rng, orDash(sb.Addr), orDash(sb.Host), sb.PID, since)
	}
	tw.Flush()
}

const (
	msTime  = "2006-01-02T15:04:05.000Z"
	secTime = "2006-01-02T15:04:05Z"
)

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func msOrDash(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(msTime)
}

func durOrDash(ms *int64, signed bool) string {
	if ms == nil {
		return "-"
	}
	d := (time.Duration(*ms) * time.Millisecond).String()
	if signed && *ms >= 0 {
		d = "+" + d
	}
	return d
}
