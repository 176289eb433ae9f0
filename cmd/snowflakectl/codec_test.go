package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// runCtl runs snowflakectl in-process with the given stdin.
func runCtl(t *testing.T, stdin string, args ...string) (stdout, stderr string, rc int) {
	t.Helper()
	var out, errb bytes.Buffer
	if len(args) > 0 && args[0] == "decode" {
		rc = decodeFrom(args[1:], strings.NewReader(stdin), &out, &errb)
	} else {
		rc = run(args, input{}, &out, &errb)
	}
	return out.String(), errb.String(), rc
}

func TestEncodeWorkedExample(t *testing.T) {
	t.Parallel()
	out, errs, rc := runCtl(t, "", "encode", "--unix-ms", "1700000000000", "--datacenter", "7", "--machine", "13", "--sequence", "4095")
	if rc != 0 || out != "1724551110457221119\n" {
		t.Fatalf("encode = %q (stderr %q, rc %d), want 1724551110457221119", out, errs, rc)
	}
	out, _, rc = runCtl(t, "", "encode", "--time", "2023-11-14T22:13:20Z", "--datacenter", "7", "--machine", "13", "--sequence", "4095")
	if rc != 0 || out != "1724551110457221119\n" {
		t.Fatalf("encode --time = %q rc %d", out, rc)
	}
}

func TestEncodeBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want string // a word the one-line error must contain
	}{
		{[]string{"--unix-ms", "5", "--datacenter", "1", "--machine", "1"}, "timestamp"},
		{[]string{"--unix-ms", "1700000000000", "--datacenter", "32", "--machine", "1"}, "datacenter 32"},
		{[]string{"--unix-ms", "1700000000000", "--datacenter", "1", "--machine", "-1"}, "machine -1"},
		{[]string{"--unix-ms", "1700000000000", "--datacenter", "1", "--machine", "1", "--sequence", "4096"}, "sequence 4096"},
		{[]string{"--unix-ms", "x", "--datacenter", "1", "--machine", "1"}, "unix-ms"},
		{[]string{"--datacenter", "1", "--machine", "1"}, "--unix-ms"},
		{[]string{"--unix-ms", "1700000000000", "--machine", "1"}, "--datacenter"},
		{[]string{"--time", "yesterday", "--datacenter", "1", "--machine", "1"}, "--time"},
		{[]string{"--bogus"}, "bogus"},
	}
	for _, c := range cases {
		out, errs, rc := runCtl(t, "", append([]string{"encode"}, c.args...)...)
		if rc != 2 || out != "" || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("encode %v: rc %d, stdout %q, stderr %q; want rc 2 and one line naming %q", c.args, rc, out, errs, c.want)
		}
	}
}

func TestDecode(t *testing.T) {
	t.Parallel()
	out, _, rc := runCtl(t, "", "decode", "1724551110457221119", "0")
	want := "1724551110457221119 unix_ms=1700000000000 time=2023-11-14T22:13:20Z datacenter=7 machine=13 sequence=4095 short=1FVPP347WXQZZ\n" +
		"0 unix_ms=1288834974657 time=2010-11-04T01:42:54.657Z datacenter=0 machine=0 sequence=0 short=0000000000000\n"
	if rc != 0 || out != want {
		t.Fatalf("decode = %q rc %d, want %q", out, rc, want)
	}
}

// TestShortFormCLI: encode --format short prints the short form, and
// decode reads it in either case as it reads the decimal form.
func TestShortFormCLI(t *testing.T) {
	t.Parallel()
	out, errs, rc := runCtl(t, "", "encode", "--unix-ms", "1700000000000", "--datacenter", "7", "--machine", "13", "--sequence", "4095", "--format", "short")
	if rc != 0 || out != "1FVPP347WXQZZ\n" {
		t.Fatalf("encode --format short = %q (stderr %q, rc %d), want 1FVPP347WXQZZ", out, errs, rc)
	}
	if _, errs, rc := runCtl(t, "", "encode", "--unix-ms", "1700000000000", "--datacenter", "7", "--machine", "13", "--format", "hex"); rc != 2 || !strings.Contains(errs, `--format "hex"`) {
		t.Fatalf("encode --format hex: rc %d, stderr %q; want 2 naming the flag", rc, errs)
	}
	dec, _, _ := runCtl(t, "", "decode", "1724551110457221119")
	for _, s := range []string{"1FVPP347WXQZZ", "1fvpp347wxqzz"} {
		out, errs, rc := runCtl(t, s+"\n", "decode", "-")
		if rc != 0 || out != dec {
			t.Fatalf("decode %s = %q (stderr %q, rc %d), want %q", s, out, errs, rc, dec)
		}
	}
	out, errs, rc = runCtl(t, "", "decode", "1FVPP347WXQZU", "8000000000000")
	if rc != 2 || out != "" || !strings.Contains(errs, `id "1FVPP347WXQZU": not a short-form ID`) || !strings.Contains(errs, "above the largest ID") {
		t.Fatalf("decode of bad short forms: rc %d, stdout %q, stderr %q", rc, out, errs)
	}
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	out, _, rc := runCtl(t, "1724551110457221119\n\n9223372036854775807\n", "decode", "--json", "-")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if rc != 0 || len(lines) != 2 {
		t.Fatalf("decode --json - = %q rc %d", out, rc)
	}
	var d map[string]any
	dec := json.NewDecoder(strings.NewReader(lines[0]))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"id": "1724551110457221119", "unix_ms": "1700000000000", "time": "2023-11-14T22:13:20Z",
		"datacenter": "7", "machine": "13", "sequence": "4095", "short": "1FVPP347WXQZZ"}
	if len(d) != len(want) {
		t.Fatalf("keys = %v, want %v", d, want)
	}
	for k, v := range want {
		if got := fmt.Sprint(d[k]); got != v {
			t.Errorf("%s = %v, want %s", k, got, v)
		}
	}
}

func TestDecodeBadInput(t *testing.T) {
	t.Parallel()
	out, errs, rc := runCtl(t, "", "decode", "42", "-5", "abc", "99999999999999999999")
	if rc != 2 {
		t.Fatalf("rc = %d, want 2", rc)
	}
	if !strings.HasPrefix(out, "42 ") || strings.Count(out, "\n") != 1 {
		t.Errorf("good ID not decoded: %q", out)
	}
	for _, w := range []string{"id -5", `id "abc"`, `id "99999999999999999999"`} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr %q does not name %s", errs, w)
		}
	}
	if _, _, rc := runCtl(t, "", "decode"); rc != 2 {
		t.Errorf("decode with no ID: rc %d, want 2", rc)
	}
	// A negative ID first is an ID out of range, not an unknown flag.
	for _, args := range [][]string{{"decode", "-1"}, {"decode", "--json", "-1", "7"}} {
		out, errs, rc := runCtl(t, "", args...)
		if rc != 2 || !strings.Contains(errs, "id -1 is out of range 0..9223372036854775807") {
			t.Errorf("%q: rc %d, stderr %q; want 2 and the ID's range", args, rc, errs)
		}
		if len(args) == 4 && !strings.Contains(out, `"id":7`) {
			t.Errorf("%q: the good ID was not decoded: %q", args, out)
		}
	}
}

func TestHelpAndUnknown(t *testing.T) {
	t.Parallel()
	out, _, rc := runCtl(t, "", "encode", "-h")
	if rc != 0 || !strings.Contains(out, "--datacenter") && !strings.Contains(out, "-datacenter") {
		t.Errorf("encode -h: rc %d, %q", rc, out)
	}
	out, _, rc = runCtl(t, "", "help")
	if rc != 0 || !strings.Contains(out, "encode") || !strings.Contains(out, "decode") {
		t.Errorf("help: rc %d, %q", rc, out)
	}
	if _, errs, rc := runCtl(t, "", "frobnicate"); rc != 2 || !strings.Contains(errs, "frobnicate") {
		t.Errorf("unknown command: rc %d, %q", rc, errs)
	}
}
