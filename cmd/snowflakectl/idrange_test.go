package main

import (
	"strings"
	"testing"
)

// TestRange: snowflakectl range answers what IDRANGE does, offline, in
// either form; out-of-range and malformed times are one line naming them.
func TestRange(t *testing.T) {
	t.Parallel()
	out, errs, rc := runCtl(t, "", "range", "1700000000000", "2023-11-14T22:13:20.999Z")
	if rc != 0 || out != "1724551110456246272 1724551114650550271\n" {
		t.Fatalf("range = %q (stderr %q, rc %d)", out, errs, rc)
	}
	out, _, rc = runCtl(t, "", "range", "--format", "short", "2023-11-14T22:13:20Z", "1700000000999")
	if rc != 0 || out != "1FVPP347W0000 1FVPP384VZZZZ\n" {
		t.Fatalf("range --format short = %q rc %d", out, rc)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"1000", "1700000000000"}, "from (unix ms) 1000 is out of range 1288834974657..3487858230208"},
		{[]string{"1700000000000", "9999999999999"}, "to (unix ms) 9999999999999 is out of range"},
		{[]string{"1700000000001", "1700000000000"}, "empty ID range: from 2023-11-14T22:13:20.001Z is after to 2023-11-14T22:13:20Z"},
		{[]string{"noon", "1700000000000"}, `FROM "noon" is neither Unix milliseconds nor an RFC 3339 time`},
		{[]string{"1700000000000"}, "want FROM and TO, got 1 arguments"},
		{[]string{"--format", "hex", "1", "2"}, `--format "hex"`},
	} {
		out, errs, rc := runCtl(t, "", append([]string{"range"}, c.args...)...)
		if rc != 2 || out != "" || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("range %v: rc %d, stdout %q, stderr %q; want rc 2 and one line saying %q", c.args, rc, out, errs, c.want)
		}
	}
}
