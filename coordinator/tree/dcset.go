package tree

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/snowfleet/snowfleet/snowflake"
)

// ErrBadRanges: a datacenter range list does not parse (such as "5-2" or
// "40").
var ErrBadRanges = errors.New("bad datacenter ranges")

// DCSet is a set of datacenter IDs (0..31), the datacenters a fleet owns,
// one bit each. Its zero value is the empty set.
type DCSet uint32

// AllDatacenters owns every datacenter: what a root without ranges owns.
const AllDatacenters DCSet = 1<<(snowflake.MaxDatacenter+1) - 1

// ParseDCSet reads a range list such as "0-3,8": comma-separated IDs and
// inclusive lo-hi ranges, each within 0..31, lo <= hi. Blanks around items
// are ignored; an empty list, an empty item or an overlap between items is
// an error, so that a typo does not widen what a fleet owns.
func ParseDCSet(s string) (DCSet, error) {
	if strings.TrimSpace(s) == "" {
		return 0, fmt.Errorf("%w: empty; give IDs and ranges within 0-%d such as 0-3,8", ErrBadRanges, snowflake.MaxDatacenter)
	}
	var set DCSet
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		lo, hi, isRange := strings.Cut(item, "-")
		a, errA := parseDC(lo)
		b, errB := a, errA
		if isRange {
			b, errB = parseDC(hi)
		}
		switch {
		case item == "":
			return 0, fmt.Errorf("%w: %q has an empty item", ErrBadRanges, s)
		case errA != nil || errB != nil:
			return 0, fmt.Errorf("%w: %q: %q is not a datacenter ID or lo-hi range within 0-%d", ErrBadRanges, s, item, snowflake.MaxDatacenter)
		case a > b:
			return 0, fmt.Errorf("%w: %q: range %q runs backwards", ErrBadRanges, s, item)
		}
		r := DCRange(a, b)
		if set&r != 0 {
			return 0, fmt.Errorf("%w: %q: %q repeats datacenters already listed", ErrBadRanges, s, item)
		}
		set |= r
	}
	return set, nil
}

func parseDC(s string) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > snowflake.MaxDatacenter || s != strconv.Itoa(n) {
		return 0, fmt.Errorf("datacenter %q", s)
	}
	return n, nil
}

// DCRange is the set lo..hi inclusive (both within 0..31, lo <= hi).
func DCRange(lo, hi int) DCSet {
	return DCSet(uint64(1)<<(hi+1) - uint64(1)<<lo)
}

// Has reports whether dc is in the set.
func (s DCSet) Has(dc int) bool { return dc >= 0 && dc <= snowflake.MaxDatacenter && s&(1<<dc) != 0 }

// Len is how many datacenters the set holds.
func (s DCSet) Len() int { return bits.OnesCount32(uint32(s)) }

// Slots is how many slots the set's datacenters hold.
func (s DCSet) Slots() int { return s.Len() * (snowflake.MaxMachine + 1) }

// String writes the set in ParseDCSet's form, runs as ranges: "0-3,8";
// the empty set is "".
func (s DCSet) String() string {
	var b strings.Builder
	for dc := 0; dc <= snowflake.MaxDatacenter; dc++ {
		if !s.Has(dc) {
			continue
		}
		end := dc
		for end < snowflake.MaxDatacenter && s.Has(end+1) {
			end++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(dc))
		if end > dc {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(end))
		}
		dc = end
	}
	return b.String()
}
