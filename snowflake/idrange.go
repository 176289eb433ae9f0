package snowflake

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ErrEmptyRange: a time window holds no whole millisecond an ID can carry
// (from after to, or both inside one millisecond).
var ErrEmptyRange = errors.New("empty ID range")

// ParseInstant reads a time given as Unix milliseconds (digits, perhaps a
// leading minus) or as an RFC 3339 time (fractions of a second allowed).
// name is the argument's name, for the error.
func ParseInstant(name, s string) (time.Time, error) {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is neither Unix milliseconds nor an RFC 3339 time (2023-11-14T22:13:20Z)", name, s)
	}
	return t, nil
}

// IDRange is the smallest and the largest ID, of any slot, whose timestamp
// lies in [from, to]: first is from's millisecond (rounded up) with every
// other field 0, last is to's millisecond (rounded down) with every other
// field at its limit. A time outside what an ID can carry
// (MinUnixMs..MaxUnixMs) is a *RangeError naming it as "from" or "to"; a
// window holding no whole millisecond is ErrEmptyRange.
func IDRange(from, to time.Time) (first, last int64, err error) {
	fromMs := ceilMs(from)
	toMs := to.UnixMilli() // rounded down: a time before 1970 is out of range anyway
	if err := checkRange("from (unix ms)", fromMs, MinUnixMs, MaxUnixMs); err != nil {
		return 0, 0, fmt.Errorf("id range: %w", err)
	}
	if err := checkRange("to (unix ms)", toMs, MinUnixMs, MaxUnixMs); err != nil {
		return 0, 0, fmt.Errorf("id range: %w", err)
	}
	if fromMs > toMs {
		return 0, 0, fmt.Errorf("%w: from %s is after to %s", ErrEmptyRange, from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
	}
	first = pack(fromMs-Epoch, 0, 0, 0)
	last = pack(toMs-Epoch, MaxDatacenter, MaxMachine, MaxSequence)
	return first, last, nil
}

// ceilMs is t in Unix milliseconds, rounded up.
func ceilMs(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}
