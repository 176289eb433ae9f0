package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/snowfleet/snowfleet/snowflake"
)

// runRange is the worker's IDRANGE, offline: arithmetic on the layout.
func runRange(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("range", "[--format integer|short] FROM TO",
		"Prints the smallest and the largest ID, of any slot, whose timestamp lies in\n"+
			"[FROM, TO], on one line. FROM and TO are Unix milliseconds or RFC 3339 times\n"+
			"(a fraction of a millisecond rounds inwards). For a scan by time:\n"+
			"WHERE id BETWEEN first AND last.")
	format := fs.String("format", "integer", "print the IDs as decimal `integer`s or in the 13-character short form (short)")
	if rc := parse(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if fs.NArg() != 2 {
		return usageError(stderr, "range", "want FROM and TO, got %d arguments", fs.NArg())
	}
	if *format != "integer" && *format != "short" {
		return usageError(stderr, "range", "--format %q: want integer or short", *format)
	}
	from, err := snowflake.ParseInstant("FROM", fs.Arg(0))
	if err != nil {
		return usageError(stderr, "range", "%v", err)
	}
	to, err := snowflake.ParseInstant("TO", fs.Arg(1))
	if err != nil {
		return usageError(stderr, "range", "%v", err)
	}
	first, last, err := snowflake.IDRange(from, to)
	if err != nil {
		return usageError(stderr, "range", "%v", rangeCause(err))
	}
	str := func(id int64) string { return strconv.FormatInt(id, 10) }
	if *format == "short" {
		str = snowflake.FormatShort
	}
	fmt.Fprintln(stdout, str(first), str(last))
	return exitOK
}
