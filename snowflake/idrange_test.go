package snowflake

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func mustInstant(t *testing.T, name, s string) time.Time {
	t.Helper()
	tm, err := ParseInstant(name, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// TestIDRange: the range of a window holds exactly the IDs, of every slot,
// whose timestamp lies in it; Unix ms and RFC 3339 agree; a fraction of a
// millisecond rounds inwards.
func TestIDRange(t *testing.T) {
	t.Parallel()
	first, last, err := IDRange(mustInstant(t, "from", "1700000000000"), mustInstant(t, "to", "2023-11-14T22:13:20Z"))
	if err != nil {
		t.Fatal(err)
	}
	if want := pack(1700000000000-Epoch, 0, 0, 0); first != want || last != want+1<<timestampShift-1 {
		t.Fatalf("IDRange(one ms) = %d..%d, want %d..%d", first, last, want, want+1<<timestampShift-1)
	}
	if f := mustDecode(t, last); f.UnixMs != 1700000000000 || f.Datacenter != MaxDatacenter || f.Machine != MaxMachine || f.Sequence != MaxSequence {
		t.Fatalf("last = %+v", f)
	}
	first, last, err = IDRange(mustInstant(t, "from", "2023-11-14T22:13:20.0005Z"), mustInstant(t, "to", "2023-11-14T23:13:20.9999+01:00"))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := mustDecode(t, first).UnixMs, mustDecode(t, last).UnixMs; a != 1700000000001 || b != 1700000000999 {
		t.Fatalf("fractions: %d..%d, want 1700000000001..1700000000999", a, b)
	}

	r := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		a, b := MinUnixMs+r.Int64N(MaxTimestamp+1), MinUnixMs+r.Int64N(MaxTimestamp+1)
		if r.IntN(4) == 0 {
			b = a + r.Int64N(3)
		}
		a, b = min(a, b, MaxUnixMs), min(max(a, b), MaxUnixMs)
		first, last, err := IDRange(time.UnixMilli(a), time.UnixMilli(b))
		if err != nil {
			t.Fatalf("IDRange(%d, %d): %v", a, b, err)
		}
		for _, ms := range []int64{a - 1, a, b, b + 1, a + r.Int64N(b-a+1)} {
			if ms < MinUnixMs || ms > MaxUnixMs {
				continue
			}
			id, _ := Encode(Fields{UnixMs: ms, Datacenter: r.IntN(32), Machine: r.IntN(32), Sequence: r.IntN(4096)})
			if in := id >= first && id <= last; in != (ms >= a && ms <= b) {
				t.Fatalf("IDRange(%d, %d) = %d..%d: ID at %d inside is %v", a, b, first, last, ms, in)
			}
		}
	}
	if first, last, err := IDRange(time.UnixMilli(MinUnixMs), time.UnixMilli(MaxUnixMs)); err != nil || first != 0 || last != 1<<63-1 {
		t.Fatalf("the whole range: %d..%d, %v", first, last, err)
	}
}

// TestIDRangeErrors: a time an ID cannot carry, a window holding no
// millisecond, and text that is no time are errors naming them.
func TestIDRangeErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		from, to, want string
	}{
		{"1000", "1700000000000", "from (unix ms) 1000 is out of range 1288834974657..3487858230208"},
		{"1700000000000", "3487858230209", "to (unix ms) 3487858230209 is out of range"},
		{"2010-11-04T01:42:54.656Z", "1700000000000", "from (unix ms) 1288834974656 is out of range"},
		{"1700000000001", "1700000000000", "from 2023-11-14T22:13:20.001Z is after to 2023-11-14T22:13:20Z"},
		{"2023-11-14T22:13:20.0001Z", "2023-11-14T22:13:20.0009Z", "is after to"},
	} {
		_, _, err := IDRange(mustInstant(t, "from", c.from), mustInstant(t, "to", c.to))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("IDRange(%s, %s) = %v, want an error saying %q", c.from, c.to, err, c.want)
		}
		if strings.Contains(c.want, "after") && !errors.Is(err, ErrEmptyRange) {
			t.Errorf("IDRange(%s, %s) = %v, want ErrEmptyRange", c.from, c.to, err)
		}
	}
	if _, err := ParseInstant("from", "yesterday"); err == nil || !strings.Contains(err.Error(), `from "yesterday" is neither Unix milliseconds nor an RFC 3339 time`) {
		t.Errorf("ParseInstant(yesterday) = %v", err)
	}
}
