package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/snowflake"
)

func (c *ctl) encodeCommand() *ffcli.Command {
	fs := newFlagSet("encode")
	unixMs := fs.Int64("unix-ms", 0, "timestamp, Unix `milliseconds` (from 1288834974657)")
	at := fs.String("time", "", "timestamp as RFC 3339 `time` (e.g. 2023-11-14T22:13:20.000Z), instead of --unix-ms")
	dc := fs.Int("datacenter", 0, "datacenter `0..31`")
	machine := fs.Int("machine", 0, "machine `0..31`")
	seq := fs.Int("sequence", 0, "sequence `0..4095`")
	format := fs.String("format", "integer", "print the ID as a decimal `integer` or in the 13-character short form (short)")
	return c.command(fs, "--unix-ms MS|--time RFC3339 --datacenter N --machine N [--sequence N] [--format integer|short]",
		"build an ID from its fields",
		"Prints the ID made of the given fields. Every field is checked against the\n"+
			"41/5/5/12 layout (epoch 1288834974657 ms).",
		func(_ context.Context, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			if *format != "integer" && *format != "short" {
				return usagef("--format %q: want integer or short", *format)
			}
			set := flagSet(fs)
			switch {
			case set["unix-ms"] && set["time"]:
				return usagef("give --unix-ms or --time, not both")
			case set["time"]:
				t, err := time.Parse(time.RFC3339Nano, *at)
				if err != nil {
					return usagef("--time %q is not an RFC 3339 time", *at)
				}
				*unixMs = t.UnixMilli()
			case !set["unix-ms"]:
				return usagef("--unix-ms (or --time) is required")
			}
			for _, name := range []string{"datacenter", "machine"} {
				if !set[name] {
					return usagef("--%s is required", name)
				}
			}
			id, err := snowflake.Encode(snowflake.Fields{UnixMs: *unixMs, Datacenter: *dc, Machine: *machine, Sequence: *seq})
			if err != nil {
				return usage(rangeCause(err))
			}
			if *format == "short" {
				fmt.Fprintln(c.stdout, snowflake.FormatShort(id))
			} else {
				fmt.Fprintln(c.stdout, id)
			}
			return nil
		})
}

// flagSet names the flags given on the command line.
func flagSet(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}
