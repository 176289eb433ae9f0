package snowflake

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestWorkedExample(t *testing.T) {
	t.Parallel()
	f := Fields{UnixMs: 1700000000000, Datacenter: 7, Machine: 13, Sequence: 4095}
	id, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if id != 1724551110457221119 {
		t.Fatalf("Encode(%+v) = %d, want 1724551110457221119", f, id)
	}
	got, err := Decode(1724551110457221119)
	if err != nil {
		t.Fatal(err)
	}
	if got != f {
		t.Fatalf("Decode = %+v, want %+v", got, f)
	}
	if s := got.Time().Format("2006-01-02T15:04:05.000Z07:00"); s != "2023-11-14T22:13:20.000Z" {
		t.Fatalf("Time = %s", s)
	}
}

func TestEncodeRejectsOutOfRange(t *testing.T) {
	t.Parallel()
	ok := Fields{UnixMs: 1700000000000, Datacenter: 7, Machine: 13, Sequence: 1}
	cases := []struct {
		name  string
		mod   func(*Fields)
		field string
		value string
	}{
		{"before epoch", func(f *Fields) { f.UnixMs = Epoch - 1 }, "timestamp", "1288834974656"},
		{"past 41 bits", func(f *Fields) { f.UnixMs = MaxUnixMs + 1 }, "timestamp", "3487858230209"},
		{"datacenter high", func(f *Fields) { f.Datacenter = 32 }, "datacenter", "32"},
		{"datacenter negative", func(f *Fields) { f.Datacenter = -1 }, "datacenter", "-1"},
		{"machine high", func(f *Fields) { f.Machine = 32 }, "machine", "32"},
		{"sequence high", func(f *Fields) { f.Sequence = 4096 }, "sequence", "4096"},
		{"sequence negative", func(f *Fields) { f.Sequence = -5 }, "sequence", "-5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := ok
			c.mod(&f)
			_, err := Encode(f)
			var re *RangeError
			if !errors.As(err, &re) {
				t.Fatalf("Encode(%+v) error = %v, want a RangeError", f, err)
			}
			msg := err.Error()
			if !strings.Contains(msg, c.field) || !strings.Contains(msg, c.value) || !strings.Contains(msg, "..") {
				t.Fatalf("error %q does not name field %q, value %s and the range", msg, c.field, c.value)
			}
		})
	}
	// The edges themselves are valid.
	for _, f := range []Fields{
		{UnixMs: MinUnixMs}, {UnixMs: MaxUnixMs, Datacenter: 31, Machine: 31, Sequence: 4095},
	} {
		if _, err := Encode(f); err != nil {
			t.Errorf("Encode(%+v): %v", f, err)
		}
	}
}

func TestDecodeRejectsNegative(t *testing.T) {
	t.Parallel()
	_, err := Decode(-1)
	if err == nil || !strings.Contains(err.Error(), "id -1") {
		t.Fatalf("Decode(-1) error = %v, want one naming id -1", err)
	}
}

// Every field is independent: sweep each one over its whole range with the
// others random, plus random points of the whole space.
func TestRoundTripWholeSpace(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	randFields := func() Fields {
		return Fields{
			UnixMs:     MinUnixMs + r.Int64N(MaxTimestamp+1),
			Datacenter: r.IntN(MaxDatacenter + 1),
			Machine:    r.IntN(MaxMachine + 1),
			Sequence:   r.IntN(MaxSequence + 1),
		}
	}
	check := func(f Fields) {
		t.Helper()
		id, err := Encode(f)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", f, err)
		}
		if id < 0 {
			t.Fatalf("Encode(%+v) = %d, negative", f, id)
		}
		got, err := Decode(id)
		if err != nil || got != f {
			t.Fatalf("Decode(Encode(%+v)) = %+v, %v", f, got, err)
		}
	}
	for dc := 0; dc <= MaxDatacenter; dc++ {
		for m := 0; m <= MaxMachine; m++ {
			for _, seq := range []int{0, 1, r.IntN(4096), 4094, 4095} {
				f := randFields()
				f.Datacenter, f.Machine, f.Sequence = dc, m, seq
				check(f)
			}
		}
	}
	for bit := 0; bit < TimestampBits; bit++ {
		f := randFields()
		f.UnixMs = Epoch + 1<<bit
		check(f)
		f.UnixMs = Epoch + 1<<bit - 1
		check(f)
	}
	for i := 0; i < 200000; i++ {
		check(randFields())
	}
}

// IDs order by timestamp first, then slot, then sequence.
func TestOrdering(t *testing.T) {
	t.Parallel()
	a, _ := Encode(Fields{UnixMs: 1700000000000, Datacenter: 31, Machine: 31, Sequence: 4095})
	b, _ := Encode(Fields{UnixMs: 1700000000001})
	if a >= b {
		t.Fatalf("a later millisecond must sort after: %d >= %d", a, b)
	}
}

func FuzzDecode(f *testing.F) {
	for _, id := range []int64{0, 1, 1724551110457221119, 1<<63 - 1, -1, -1 << 63} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id int64) {
		fields, err := Decode(id)
		if id < 0 {
			if err == nil {
				t.Fatalf("Decode(%d) accepted a negative id", id)
			}
			return
		}
		if err != nil {
			t.Fatalf("Decode(%d): %v", id, err)
		}
		back, err := Encode(fields)
		if err != nil || back != id {
			t.Fatalf("Encode(Decode(%d)) = %d, %v", id, back, err)
		}
	})
}

func TestSlotNames(t *testing.T) {
	t.Parallel()
	for i := 0; i < Slots; i++ {
		s := SlotAt(i)
		if s.Index() != i {
			t.Fatalf("SlotAt(%d).Index() = %d", i, s.Index())
		}
		p, err := ParseSlot(s.String())
		if err != nil || p != s {
			t.Fatalf("ParseSlot(%q) = %v, %v", s.String(), p, err)
		}
	}
	if got := (Slot{7, 13}).String(); got != "dc07-m13" {
		t.Fatalf("String = %q", got)
	}
	// JSON logs and documents name a slot as operators see it in ZooKeeper.
	if b, err := json.Marshal(map[string]Slot{"slot": {7, 13}}); err != nil || string(b) != `{"slot":"dc07-m13"}` {
		t.Fatalf("json.Marshal of a slot = %s, %v", b, err)
	}
	for _, bad := range []string{"dc32-m00", "dc00-m32", "dc7-m13", "x", "dc07-m13-0000000001"} {
		if _, err := ParseSlot(bad); err == nil {
			t.Errorf("ParseSlot(%q) accepted", bad)
		}
	}
}
