package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

func runEncode(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("encode", "--unix-ms MS|--time RFC3339 --datacenter N --machine N [--sequence N] [--format integer|short]",
		"Prints the ID made of the given fields. Every field is checked against the\n"+
			"41/5/5/12 layout (epoch 1288834974657 ms).")
	unixMs := fs.Int64("unix-ms", 0, "timestamp, Unix `milliseconds` (from 1288834974657)")
	at := fs.String("time", "", "timestamp as RFC 3339 `time` (e.g. 2023-11-14T22:13:20.000Z), instead of --unix-ms")
	dc := fs.Int("datacenter", 0, "datacenter `0..31`")
	machine := fs.Int("machine", 0, "machine `0..31`")
	seq := fs.Int("sequence", 0, "sequence `0..4095`")
	format := fs.String("format", "integer", "print the ID as a decimal `integer` or in the 13-character short form (short)")
	if rc := parse(fs, args, stdout, stderr); rc >= 0 {
		return rc
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "encode", "unexpected argument %q", fs.Arg(0))
	}
	if *format != "integer" && *format != "short" {
		return usageError(stderr, "encode", "--format %q: want integer or short", *format)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["unix-ms"] && set["time"]:
		return usageError(stderr, "encode", "give --unix-ms or --time, not both")
	case set["time"]:
		t, err := time.Parse(time.RFC3339Nano, *at)
		if err != nil {
			return usageError(stderr, "encode", "--time %q is not an RFC 3339 time", *at)
		}
		*unixMs = t.UnixMilli()
	case !set["unix-ms"]:
		return usageError(stderr, "encode", "--unix-ms (or --time) is required")
	}
	for _, name := range []string{"datacenter", "machine"} {
		if !set[name] {
			return usageError(stderr, "encode", "--%s is required", name)
		}
	}
	id, err := snowflake.Encode(snowflake.Fields{UnixMs: *unixMs, Datacenter: *dc, Machine: *machine, Sequence: *seq})
	if err != nil {
		return usageError(stderr, "encode", "%v", rangeCause(err))
	}
	if *format == "short" {
		fmt.Fprintln(stdout, snowflake.FormatShort(id))
	} else {
		fmt.Fprintln(stdout, id)
	}
	return exitOK
}
