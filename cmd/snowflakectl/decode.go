package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/snowfleet/snowfleet/snowflake"
)

// decoded is the JSON form of one ID.
type decoded struct {
	ID         int64  `json:"id"`
	UnixMs     int64  `json:"unix_ms"`
	Time       string `json:"time"`
	Datacenter int    `json:"datacenter"`
	Machine    int    `json:"machine"`
	Sequence   int    `json:"sequence"`
	Short      string `json:"short"`
}

func (c *ctl) decodeCommand() *ffcli.Command {
	fs := newFlagSet("decode")
	asJSON := fs.Bool("json", false, "print one JSON object per ID (keys id, unix_ms, time, datacenter, machine, sequence, short)")
	return c.command(fs, "[--json] ID... (or IDs on stdin, one per line, with -)",
		"split IDs into their fields",
		"Prints the fields of each ID, one line (or one JSON object) per ID. An ID is\n"+
			"decimal or the 13-character short form (Crockford base-32, either case).",
		func(_ context.Context, ids []string) error {
			if len(ids) == 0 {
				return usagef("no ID given (pass IDs as arguments, or - to read them from stdin)")
			}
			if len(ids) == 1 && ids[0] == "-" {
				ids = nil
				sc := bufio.NewScanner(c.in.r)
				for sc.Scan() {
					if s := strings.TrimSpace(sc.Text()); s != "" {
						ids = append(ids, s)
					}
				}
				if err := sc.Err(); err != nil {
					return fmt.Errorf("reading stdin: %w", err)
				}
			}
			return c.decode(ids, *asJSON)
		})
}

// decode prints each ID's fields; an ID that is none is said on stderr, in
// its place (stdout flushed first, for a terminal showing both), and the
// others go on: exit 2 after the last.
func (c *ctl) decode(ids []string, asJSON bool) error {
	w := bufio.NewWriter(c.stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	var status error
	for _, s := range ids {
		d, err := decodeOne(s)
		if err != nil {
			w.Flush()
			c.warnf("decode", "%v", err)
			status = exitStatus(exitUsage)
			continue
		}
		if asJSON {
			_ = enc.Encode(d)
			continue
		}
		fmt.Fprintf(w, "%d unix_ms=%d time=%s datacenter=%d machine=%d sequence=%d short=%s\n",
			d.ID, d.UnixMs, d.Time, d.Datacenter, d.Machine, d.Sequence, d.Short)
	}
	return status
}

// idsAfterFlags ends the flags before the first negative number: to the
// flag package "-1" is an unknown flag, but it is an ID, out of range, and
// decodeOne says so with the field and the range.
func idsAfterFlags(args []string) []string {
	for i, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			break // the flags have ended already
		}
		if _, err := strconv.ParseInt(a, 10, 64); err == nil {
			return append(append(args[:i:i], "--"), args[i:]...)
		}
	}
	return args
}

// rangeCause drops the package's "encode:"/"decode:" context, which only
// repeats the subcommand's name, and keeps the sentence naming the field.
func rangeCause(err error) error {
	var re *snowflake.RangeError
	if errors.As(err, &re) {
		return re
	}
	return err
}

func decodeOne(s string) (decoded, error) {
	var id int64
	var err error
	if len(s) == snowflake.ShortLen {
		if id, err = snowflake.ParseShort(s); err != nil {
			return decoded{}, fmt.Errorf("id %q: %w", s, err)
		}
	} else if id, err = strconv.ParseInt(s, 10, 64); err != nil {
		return decoded{}, fmt.Errorf("id %q is not a decimal integer in 0..%d, nor a %d-character short form", s, int64(1<<63-1), snowflake.ShortLen)
	}
	f, err := snowflake.Decode(id)
	if err != nil {
		return decoded{}, rangeCause(err)
	}
	return decoded{
		ID: id, UnixMs: f.UnixMs, Time: f.Time().Format(time.RFC3339Nano),
		Datacenter: f.Datacenter, Machine: f.Machine, Sequence: f.Sequence,
		Short: snowflake.FormatShort(id),
	}, nil
}
