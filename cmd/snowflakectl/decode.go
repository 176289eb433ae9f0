package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

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

func runDecode(args []string, stdout, stderr io.Writer) int {
	return decodeFrom(args, os.Stdin, stdout, stderr)
}

func decodeFrom(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("decode", "[--json] ID... (or IDs on stdin, one per line, with -)",
		"Prints the fields of each ID, one line (or one JSON object) per ID. An ID is\n"+
			"decimal or the 13-character short form (Crockford base-32, either case).")
	asJSON := fs.Bool("json", false, "print one JSON object per ID (keys id, unix_ms, time, datacenter, machine, sequence, short)")
	if rc := parse(fs, idsAfterFlags(args), stdout, stderr); rc >= 0 {
		return rc
	}
	ids := fs.Args()
	if len(ids) == 0 {
		return usageError(stderr, "decode", "no ID given (pass IDs as arguments, or - to read them from stdin)")
	}
	if len(ids) == 1 && ids[0] == "-" {
		ids = nil
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			if s := strings.TrimSpace(sc.Text()); s != "" {
				ids = append(ids, s)
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Fprintf(stderr, "snowflakectl decode: reading stdin: %v\n", err)
			return exitFailure
		}
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	rc := exitOK
	for _, s := range ids {
		d, err := decodeOne(s)
		if err != nil {
			w.Flush()
			fmt.Fprintf(stderr, "snowflakectl decode: %v\n", err)
			rc = exitUsage
			continue
		}
		if *asJSON {
			_ = enc.Encode(d)
			continue
		}
		fmt.Fprintf(w, "%d unix_ms=%d time=%s datacenter=%d machine=%d sequence=%d short=%s\n",
			d.ID, d.UnixMs, d.Time, d.Datacenter, d.Machine, d.Sequence, d.Short)
	}
	return rc
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
