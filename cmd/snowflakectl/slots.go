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

func (c *ctl) slotsCommand() *ffcli.Command {
	fs := newFlagSet("slots")
	c.zk.register(fs)
	all := fs.Bool("all", false, "also list slots used before but not held now")
	asJSON := fs.Bool("json", false, "print one JSON object "+tree.SlotMapViewShape+", the schema of a worker's /slots.json")
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
			rep := slotsView(m, c.zk.root, time.Now(), *all)
			if *asJSON {
				enc := json.NewEncoder(c.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printSlots(c.stdout, rep, strings.Join(servers, ","))
			return nil
		})
}

// slotsView is the map's view (tree.SlotMapView, as a worker's
// /slots.json serves it) with the slots the table lists: the held ones,
// and with all every one ever used.
func slotsView(m tree.SlotMap, root string, now time.Time, all bool) tree.SlotMapView {
	v := m.View(root, now)
	rows := make([]tree.SlotView, 0, v.Held)
	for _, s := range v.Slots {
		if s.Held || all && s.Writer != "" { // Writer "": made with the root, never held
			rows = append(rows, s)
		}
	}
	v.Slots = rows
	return v
}

func printSlots(w io.Writer, rep tree.SlotMapView, servers string) {
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
