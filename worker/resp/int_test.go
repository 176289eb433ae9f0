package resp

import (
	"strings"
	"testing"
)

func TestAppendQuoted(t *testing.T) {
	t.Parallel()
	got := string(AppendQuoted(nil, []byte("a\r\nb\\"+strings.Repeat("x", 100))))
	if strings.ContainsAny(got, "\r\n") || !strings.HasPrefix(got, `a\x0d\x0ab\x5c`) || !strings.HasSuffix(got, "...") {
		t.Fatalf("appendQuoted = %q", got)
	}
}

func TestParseInt(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"0": 0, "4096": 4096, "-1": -1,
		"9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63} {
		if v, ok := ParseInt([]byte(in)); !ok || v != want {
			t.Errorf("ParseInt(%q) = %d, %v", in, v, ok)
		}
	}
	for _, in := range []string{"", "-", "+1", " 1", "1 ", "1.0", "9223372036854775808", "99999999999999999999", "0x10"} {
		if v, ok := ParseInt([]byte(in)); ok {
			t.Errorf("ParseInt(%q) = %d, want failure", in, v)
		}
	}
}

// The cases worker/client tested its own parseInt with.
func TestParseIntClientCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"-7", -7, true},
		{"9223372036854775807", 1<<63 - 1, true},
		{"-9223372036854775808", -1 << 63, true},
		{"9223372036854775808", 0, false},
		{"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"1x", 0, false}, {" 1", 0, false},
	} {
		got, ok := ParseInt([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
