package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/snowflake"
)

// rangeCommand is the worker's IDRANGE, offline: arithmetic on the layout.
func (c *ctl) rangeCommand() *ffcli.Command {
	fs := newFlagSet("range")
	format := fs.String("format", "integer", "print the IDs as decimal `integer`s or in the 13-character short form (short)")
	return c.command(fs, "[--format integer|short] FROM TO",
		"the smallest and largest ID of a time window (offline)",
		"Prints the smallest and the largest ID, of any slot, whose timestamp lies in\n"+
			"[FROM, TO], on one line. FROM and TO are Unix milliseconds or RFC 3339 times\n"+
			"(a fraction of a millisecond rounds inwards). For a scan by time:\n"+
			"WHERE id BETWEEN first AND last.",
		func(_ context.Context, args []string) error {
			if len(args) != 2 {
				return usagef("want FROM and TO, got %d arguments", len(args))
			}
			if *format != "integer" && *format != "short" {
				return usagef("--format %q: want integer or short", *format)
			}
			from, err := snowflake.ParseInstant("FROM", args[0])
			if err != nil {
				return usage(err)
			}
			to, err := snowflake.ParseInstant("TO", args[1])
			if err != nil {
				return usage(err)
			}
			first, last, err := snowflake.IDRange(from, to)
			if err != nil {
				return usage(rangeCause(err))
			}
			str := func(id int64) string { return strconv.FormatInt(id, 10) }
			if *format == "short" {
				str = snowflake.FormatShort
			}
			fmt.Fprintln(c.stdout, str(first), str(last))
			return nil
		})
}
