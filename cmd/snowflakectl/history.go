package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// historyFile is the slots' histories as snowflakectl history export
// writes them: what whois and audit place IDs by, offline, and what a
// database's own checks can read (coordinator/README.md, the slot node's
// history).
type historyFile struct {
	Root        string `json:"root"`
	Exported    string `json:"exported"`
	ExportedMs  int64  `json:"exported_ms"`
	Datacenters string `json:"datacenters"`
	// Slots are the histories by slot name (dc03-m01); a slot whose record
	// keeps none is left out.
	Slots map[string]tree.History `json:"slots"`
}

// owned is the fleet's datacenters, 0 when the file does not say.
func (h historyFile) owned() tree.DCSet {
	d, err := tree.ParseDCSet(h.Datacenters)
	if err != nil {
		return 0
	}
	return d
}

// of is the history of slot s.
func (h historyFile) of(s snowflake.Slot) tree.History { return h.Slots[s.String()] }

func historyOf(m tree.SlotMap, root string, now time.Time) historyFile {
	h := historyFile{Root: root, Exported: now.UTC().Format(time.RFC3339Nano), ExportedMs: now.UnixMilli(),
		Datacenters: m.Owned.String(), Slots: map[string]tree.History{}}
	for s, rec := range m.Slots {
		if !rec.History.Empty() {
			h.Slots[s.String()] = rec.History
		}
	}
	return h
}

// readHistoryFile reads what history export wrote.
func readHistoryFile(path string) (historyFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return historyFile{}, err
	}
	var h historyFile
	if err := json.Unmarshal(b, &h); err != nil {
		return historyFile{}, fmt.Errorf("%s: not a history export: %w", path, err)
	}
	if h.Slots == nil {
		return historyFile{}, fmt.Errorf("%s: not a history export: no \"slots\"", path)
	}
	return h, nil
}

// history reads the histories from the file given, or else from ZooKeeper.
func (c *ctl) history(file string, timeout time.Duration) (historyFile, error) {
	if file != "" {
		h, err := readHistoryFile(file)
		if err != nil {
			return historyFile{}, usage(err)
		}
		return h, nil
	}
	servers, err := c.zk.check()
	if err != nil {
		return historyFile{}, usage(err)
	}
	m, err := c.zk.readSlotMap(servers, timeout)
	if err != nil {
		return historyFile{}, hintNoAuth(fmt.Errorf("read the slot map: %w", err), "the root is not world-readable; pass --zk-auth")
	}
	return historyOf(m, c.zk.root, time.Now()), nil
}

// historyCommand is snowflakectl history export: every slot's history
// from ZooKeeper, as one JSON file.
func (c *ctl) historyCommand() *ffcli.Command {
	fs := newFlagSet("history")
	c.zk.register(fs)
	out := fs.String("out", "", "write to this `file` (made anew, mode 0644) instead of stdout")
	timeout := fs.Duration("timeout", 10*time.Second, "bound on reaching ZooKeeper and reading every slot node")
	return c.command(fs, "export [--zk HOST:PORT,...] [--zk-root /snowflake] [--out FILE]",
		"export every slot's history of holders (for whois and audit offline)",
		"Writes every slot's history, the tenures of its holders as the slot node\n"+
			"records them, as one JSON object: root, exported, exported_ms,\n"+
			"datacenters, and slots, by slot name, each {tenures, dropped, from_ms}\n"+
			"(coordinator/README.md). whois --history and audit --history read it.",
		func(_ context.Context, args []string) error {
			if len(args) == 0 || args[0] != "export" {
				return usagef("the one subcommand is export (snowflakectl history export)")
			}
			// Flags may follow the subcommand too.
			if err := fs.Parse(args[1:]); err != nil {
				return usage(err)
			}
			if err := noArgs(fs.Args()); err != nil {
				return err
			}
			if *timeout <= 0 {
				return usagef("--timeout %v must be positive", *timeout)
			}
			h, err := c.history("", *timeout)
			if err != nil {
				return err
			}
			b, _ := json.MarshalIndent(h, "", "  ")
			b = append(b, '\n')
			if *out == "" {
				_, err := c.stdout.Write(b)
				return err
			}
			if err := os.WriteFile(*out, b, 0o644); err != nil {
				return err
			}
			c.warnf("history", "%d slots' histories written to %s", len(h.Slots), *out)
			return nil
		})
}
