package snowflake

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// shortBoundaries are IDs at the edges: 0, 2^63-1, and every field at its
// limit with the others at theirs or at 0.
func shortBoundaries() []int64 {
	ids := []int64{0, 1, 31, 32, 1<<63 - 1, 1<<63 - 2, 1 << 62, 1<<60 - 1, 1 << 60}
	for _, ts := range []int64{0, 1, MaxTimestamp - 1, MaxTimestamp} {
		for _, dc := range []int{0, MaxDatacenter} {
			for _, m := range []int{0, MaxMachine} {
				for _, seq := range []int{0, 1, MaxSequence - 1, MaxSequence} {
					ids = append(ids, pack(ts, dc, m, seq))
				}
			}
		}
	}
	return ids
}

func TestShortWorkedExample(t *testing.T) {
	t.Parallel()
	if s := FormatShort(1724551110457221119); s != "1FVPP347WXQZZ" {
		t.Fatalf("FormatShort = %q, want 1FVPP347WXQZZ", s)
	}
	for _, c := range []struct {
		id int64
		s  string
	}{{0, "0000000000000"}, {1<<63 - 1, "7ZZZZZZZZZZZZ"}, {31, "000000000000Z"}, {32, "0000000000010"}} {
		if s := FormatShort(c.id); s != c.s {
			t.Fatalf("FormatShort(%d) = %q, want %q", c.id, s, c.s)
		}
	}
}

// TestShortRoundTrip: every ID, random or at a boundary, comes back from
// its short form, in upper and in lower case, and from ParseID.
func TestShortRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	ids := shortBoundaries()
	for range 100000 {
		ids = append(ids, r.Int64N(1<<63-1)+1)
	}
	for _, id := range ids {
		s := FormatShort(id)
		if len(s) != ShortLen {
			t.Fatalf("FormatShort(%d) = %q: %d characters, want %d", id, s, len(s), ShortLen)
		}
		for _, form := range []string{s, strings.ToLower(s)} {
			got, err := ParseShort(form)
			if err != nil || got != id {
				t.Fatalf("ParseShort(%q) = %d, %v; want %d", form, got, err, id)
			}
			if got, err := ParseID(form); err != nil || got != id {
				t.Fatalf("ParseID(%q) = %d, %v; want %d", form, got, err, id)
			}
		}
	}
}

// TestShortOrder: byte order of the short forms is the IDs' order, over
// random pairs (near ones too) and between every two boundary IDs.
func TestShortOrder(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	check := func(a, b int64) {
		t.Helper()
		sa, sb := []byte(FormatShort(a)), []byte(FormatShort(b))
		want := 0
		if a < b {
			want = -1
		} else if a > b {
			want = 1
		}
		if got := bytes.Compare(sa, sb); got != want {
			t.Fatalf("ids %d, %d: compare(%s, %s) = %d, want %d", a, b, sa, sb, got, want)
		}
		if got := bytes.Compare(bytes.ToLower(sa), bytes.ToLower(sb)); got != want {
			t.Fatalf("ids %d, %d: lower-case compare = %d, want %d", a, b, got, want)
		}
	}
	for range 100000 {
		a := r.Int64N(1<<63-1) + 1
		check(a, r.Int64N(1<<63-1)+1)
		check(a, max(a-r.Int64N(64), 0)) // neighbours differ in the last characters
		check(a, a^(1<<r.IntN(63)))      // one bit apart, anywhere
	}
	b := shortBoundaries()
	for _, x := range b {
		for _, y := range b {
			check(x, y)
		}
	}
}

// TestShortParseErrors: bad short forms are refused naming what is wrong.
func TestShortParseErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"000000000000", "12 characters, want 13"},
		{"00000000000000", "14 characters, want 13"},
		{"000000000000U", "'U' at position 13"},
		{"00000-0000000", "'-' at position 6"},
		{"8000000000000", "above the largest ID 7ZZZZZZZZZZZZ"},
	} {
		_, err := ParseShort(c.in)
		if !errors.Is(err, ErrShortForm) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("ParseShort(%q) = %v, want ErrShortForm saying %q", c.in, err, c.want)
		}
	}
	// Crockford's readings of look-alike letters.
	if id, err := ParseShort("0000000000OIL"); err != nil || id != 0<<10|1<<5|1 {
		t.Fatalf("ParseShort(0000000000OIL) = %d, %v; want 33", id, err)
	}
}

// TestParseIDForms: ParseID tells the forms apart by width.
func TestParseIDForms(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"1724551110457221119", 1724551110457221119},
		{"1FVPP347WXQZZ", 1724551110457221119},
		{"0", 0},
		{"01234567890123", 1234567890123},      // a 13-digit decimal, with a leading zero
		{"1234567890123", 1228503247364293699}, // 13 digits: the short form
	} {
		got, err := ParseID(c.in)
		if err != nil || got != c.want {
			t.Fatalf("ParseID(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"-1", "x", "", "9223372036854775808", "7ZZZZZZZZZZZZZ"} {
		if _, err := ParseID(in); err == nil || !strings.Contains(err.Error(), "13-character short form") {
			t.Fatalf("ParseID(%q) error = %v, want one naming both forms", in, err)
		}
	}
}
