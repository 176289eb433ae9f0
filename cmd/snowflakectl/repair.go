package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

func (c *ctl) repairCommand() *ffcli.Command {
	fs := newFlagSet("repair")
	c.zk.register(fs)
	c.ids.register(fs, false)
	slotsFlag := fs.String("slot", "", "the `slots` to re-create: dcNN-mNN, comma-separated, or all")
	untilFlag := fs.String("reserve-until", "", "the reservation of the re-created nodes: Unix `ms`, or now+DURATION (default now + the root's bound, 41s by default)")
	unsafeLow := fs.Bool("unsafe-low-reservation", false, "allow a --reserve-until below now + the root's bound: the re-created slots can repeat IDs a holder issued up to then")
	var skip scanSkipFlag
	skip.register(fs)
	dcs := fs.String("datacenters", "", "the datacenter `ranges` a root made again owns, such as 0-3,8, or all (required when the root is missing)")
	maxHorizon := fs.Duration("max-horizon", 0, "the bound on its workers' --horizon a root made again records, as given to init (required when the root is missing; else the root's own)")
	maxSkew := fs.Duration("max-skew", 0, "the bound on its workers' --max-skew a root made again records, as given to init (required when the root is missing; else the root's own)")
	reset := fs.Bool("reset", false, "also rewrite each named slot node that exists but is damaged (no slot record, or a forged reservation past ZooKeeper's time of its write + the root's bound) with the reservation; a valid node is never written")
	yes := fs.Bool("yes", false, "do not ask for confirmation (for scripts)")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on reaching ZooKeeper and repairing")
	return c.command(fs, "--slot dcNN-mNN[,...]|all [--reserve-until MS|now+DURATION] [--datacenters RANGES|all --max-horizon D --max-skew D] [--yes] [--zk HOST:PORT,...] [--zk-root /snowflake]",
		"re-create slot nodes deleted by hand, with a reservation (asks first)",
		"Re-creates slot nodes deleted by hand (and leases/, slots/ or the root if they\n"+
			"are missing), each with the reservation --reserve-until, so that the slot's\n"+
			"next holder issues only timestamps above it. Workers refuse a slot whose node\n"+
			"is missing and never re-create it: its history (the last holder's reservation)\n"+
			"went with it, and only the operator can say what is safe. The default, and\n"+
			"the lowest allowed without --unsafe-low-reservation, is now plus the root's\n"+
			"bound (max horizon + max skew, 41s by default): past anything a holder could\n"+
			"have reserved. A root made again needs the datacenters it owned\n"+
			"(--datacenters, or all) and the bound it recorded (--max-horizon and\n"+
			"--max-skew, as given to init), and is checked against the ensemble's\n"+
			"other fleets as init does. A node that exists is never written, unless\n"+
			"--reset and it is damaged: it holds no slot record, or a reservation past\n"+
			"ZooKeeper's time of its last write plus the root's bound (no holder wrote it;\n"+
			"workers avoid the slot): then it is rewritten with the reservation. Asks for confirmation;\n"+
			"--yes skips it, and without a terminal --yes is required.",
		func(ctx context.Context, args []string) error {
			servers, scheme, given, err := c.treeWriter(args, false)
			if err != nil {
				return err
			}
			slots, err := parseSlotList(*slotsFlag)
			if err != nil {
				return usagef("--slot: %v", err)
			}
			now := time.Now()
			var until int64
			if strings.TrimSpace(*untilFlag) != "" {
				if until, err = parseReserveUntil(*untilFlag, now); err != nil {
					return usagef("--reserve-until: %v", err)
				}
			}
			var owned tree.DCSet
			switch strings.TrimSpace(*dcs) {
			case "":
			case "all":
				owned = tree.AllDatacenters
			default:
				if owned, err = tree.ParseDCSet(*dcs); err != nil {
					return usagef("--datacenters: %v", err)
				}
			}
			if *maxHorizon < 0 || *maxSkew < 0 {
				return usagef("--max-horizon %v and --max-skew %v must be positive", *maxHorizon, *maxSkew)
			}
			if *timeout <= 0 {
				return usagef("--timeout %v must be positive", *timeout)
			}
			if err := skip.check(c, "repair"); err != nil {
				return usage(err)
			}
			if err := c.mayAsk(*yes); err != nil {
				return err
			}
			conn, err := c.zk.dial(servers, max(*timeout, 2*time.Second))
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			// As recover: the question says what repair will do, and stdout
			// then says only what it did.
			if err := c.ask(*yes, repairQuestion(slots, c.zk.root, servers, until, now, *reset)); err != nil {
				return err
			}
			if !given {
				if scheme, err = tree.FleetACLFromTree(conn, c.zk.root, c.zk.auth); err != nil {
					return err
				}
			}
			res, err := tree.RepairSlots(ctx, conn, tree.RepairConfig{Root: c.zk.root, ACL: scheme,
				Slots: slots, ReservedUntilMs: until, AllowLow: *unsafeLow, Owned: owned, MaxHorizon: *maxHorizon, MaxSkew: *maxSkew, Reset: *reset})
			c.printRepair(res)
			return hintNoAuth(err, "the fleet's nodes are writable by its operator only; pass the operator's --zk-auth-file")
		})
}

// repairQuestion is what repair asks before it writes: what it will make,
// where, with which reservation (until, or 0: the root's bound from now).
func repairQuestion(slots []snowflake.Slot, root string, servers []string, until int64, now time.Time, reset bool) string {
	what := fmt.Sprintf("%d slot node(s)", len(slots))
	if len(slots) == 1 {
		what = "slot node " + slots[0].String()
	}
	when := "now + the root's bound on the horizon (41s unless the root records another)"
	if until != 0 {
		when = fmt.Sprintf("%s (%d ms, %s from now)", time.UnixMilli(until).UTC().Format(msTime), until,
			(time.Duration(until-now.UnixMilli()) * time.Millisecond).String())
	}
	existing := "leave existing nodes as they are"
	if reset {
		existing = "rewrite existing nodes that are damaged (no slot record, or a forged reservation) with the same, and leave valid ones as they are"
	}
	return fmt.Sprintf("repair %s under %s on %s will make the missing nodes with reserved_until %s and %s. IDs of a re-created slot start above that time.",
		what, root, strings.Join(servers, ","), when, existing)
}

// printRepair says what repair did, also when it stopped part-way.
func (c *ctl) printRepair(res tree.RepairResult) {
	until := time.UnixMilli(res.ReservedUntilMs).UTC().Format(msTime)
	for _, p := range res.MadeTree {
		fmt.Fprintf(c.stdout, "made %s\n", p)
	}
	if res.MaxHorizon > 0 {
		fmt.Fprintf(c.stdout, "the root's bound: max horizon %v, max skew %v\n", res.MaxHorizon, res.MaxSkew)
	}
	for _, s := range res.Made {
		fmt.Fprintf(c.stdout, "made %s reserved until %s\n", s, until)
	}
	for _, s := range res.Reset {
		fmt.Fprintf(c.stdout, "reset damaged %s: reserved until %s\n", s, until)
	}
	if n := len(res.Existing); n > 0 && n <= 8 {
		for _, s := range res.Existing {
			fmt.Fprintf(c.stdout, "%s exists; left as it is\n", s)
		}
	} else if n > 8 {
		fmt.Fprintf(c.stdout, "%d slot nodes exist; left as they are\n", n)
	}
}

// parseSlotList reads "all" or comma-separated dcNN-mNN names.
func parseSlotList(s string) ([]snowflake.Slot, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return nil, errors.New("missing; give dcNN-mNN[,...] or all")
	case "all":
		out := make([]snowflake.Slot, snowflake.Slots)
		for i := range out {
			out[i] = snowflake.SlotAt(i)
		}
		return out, nil
	}
	var out []snowflake.Slot
	seen := map[snowflake.Slot]bool{}
	for _, part := range strings.Split(s, ",") {
		sl, err := snowflake.ParseSlot(strings.TrimSpace(part))
		if err != nil {
			return nil, fmt.Errorf("%q is not a slot like dc03-m04: %w", part, err)
		}
		if !seen[sl] {
			seen[sl] = true
			out = append(out, sl)
		}
	}
	return out, nil
}

// parseReserveUntil reads Unix ms, "now" or "now+DURATION".
func parseReserveUntil(s string, now time.Time) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("missing; give Unix ms, now or now+DURATION (say now+45s)")
	}
	if rest, ok := strings.CutPrefix(s, "now"); ok {
		if rest == "" {
			return now.UnixMilli(), nil
		}
		d, err := time.ParseDuration(strings.TrimPrefix(rest, "+"))
		if !strings.HasPrefix(rest, "+") || err != nil || d < 0 {
			return 0, fmt.Errorf("%q: want now+DURATION with a duration such as 45s or 5m", s)
		}
		return now.Add(d).UnixMilli(), nil
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is neither Unix ms nor now+DURATION", s)
	}
	if ms < snowflake.MinUnixMs || ms > snowflake.MaxUnixMs {
		return 0, fmt.Errorf("%d ms is outside the IDs' time range %d..%d", ms, snowflake.MinUnixMs, snowflake.MaxUnixMs)
	}
	return ms, nil
}
