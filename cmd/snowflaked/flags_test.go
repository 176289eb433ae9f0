package main

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/cmd/internal/cliflag"
	"github.com/snowfleet/snowfleet/snowflake"
)

// Every field a flag is bound to exists under that name in its Config, and
// the flag sets that very field: a misspelt field would leave Validate's
// errors about it without their flag.
func TestFlagsBindConfigFields(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg   any // pointer to the Config the flags set
		flags map[string]string
	}{{&o.coord, o.coordFlags}, {&o.worker, o.workerFlags}} {
		v := reflect.ValueOf(c.cfg).Elem()
		if len(c.flags) == 0 {
			t.Fatalf("%s: no flag bound", v.Type())
		}
		for field, name := range c.flags {
			f := v
			for _, part := range strings.Split(field, ".") { // TLS.CertFile: a nested field
				if f.IsValid() {
					f = f.FieldByName(part)
				}
			}
			if !f.IsValid() {
				t.Errorf("--%s is bound to %s.%s, which does not exist", name, v.Type(), field)
				continue
			}
			before := f.Interface()
			probe := map[reflect.Kind]string{reflect.String: "x:1", reflect.Int: "7", reflect.Int64: "7ms", reflect.Slice: "h:1,h:2"}[f.Kind()]
			switch {
			case name == "protected-mode": // Redis's yes|no
				probe = map[bool]string{true: "no", false: "yes"}[f.Bool()]
			case f.Kind() == reflect.Bool:
				probe = strconv.FormatBool(!f.Bool())
			case f.Type() == reflect.TypeOf(snowflake.Refuse):
				probe = "refuse"
			case f.Type() == reflect.TypeOf(snowflake.StartZero):
				probe = "spread"
			}
			if err := o.fs.Set(name, probe); err != nil {
				t.Errorf("--%s %s: %v", name, probe, err)
				continue
			}
			if reflect.DeepEqual(before, f.Interface()) {
				t.Errorf("--%s %s left %s.%s at %v", name, probe, v.Type(), field, before)
			}
		}
	}
	if want := cliflag.SplitAddrs("h:1,h:2"); !reflect.DeepEqual(o.coord.Servers, want) {
		t.Errorf("--zk h:1,h:2 set Servers %q, want %q", o.coord.Servers, want)
	}
	if o.worker.Listen != "x:1" || o.worker.MaxConns != 7 || o.coord.Datacenter != 7 {
		t.Errorf("worker %+v, coordinator datacenter %d", o.worker, o.coord.Datacenter)
	}
}

// A logical clock lead above the standby horizon would stall the worker
// while a standby waits: a flag error (exit 2, one line) naming both flags,
// whichever of the two was lowered; the defaults pass.
func TestFlagsClockLeadAboveStandbyHorizon(t *testing.T) {
	t.Setenv("SNOWFLAKE_ZK_INSECURE", "true") // not about credentials
	for _, args := range [][]string{
		{"--max-clock-lead", "8s"},
		{"--standby-horizon", "3s"},
		{"--max-clock-lead", "4s", "--standby-horizon", "3s"},
	} {
		// Refused before the daemon would start: runArgs would serve.
		o, err := parseFlags(args, io.Discard)
		if err == nil {
			err = o.validate()
		}
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a flag error", args, err)
			continue
		}
		var stdout, stderr bytes.Buffer
		code := runArgs(args, &stdout, &stderr)
		msg := strings.TrimSpace(stderr.String())
		if code != 2 || !strings.Contains(msg, "--max-clock-lead") || !strings.Contains(msg, "--standby-horizon") || strings.Contains(msg, "\n") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 and one line naming --max-clock-lead and --standby-horizon", args, code, msg)
		}
	}
	o, err := parseFlags([]string{"--max-clock-lead", "3s", "--standby-horizon", "3s"}, io.Discard)
	if err != nil {
		t.Fatalf("a lead equal to the standby horizon: %v", err)
	}
	if err := o.validate(); err != nil {
		t.Fatalf("a lead equal to the standby horizon: %v", err)
	}
	if o, err = parseFlags(nil, io.Discard); err != nil || o.validate() != nil {
		t.Fatalf("defaults: %v", err)
	}
}
