package zklayout

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"

	"github.com/snowfleet/snowfleet/snowflake"
)

// ErrBadLeaseName: a child of leases/ does not end in dcNN-mNN-<sequence>.
var ErrBadLeaseName = errors.New("not a lease node name")

// leaseTail matches a lease node name by its tail: the protected prefix in
// front makes a plain sort by name wrong. The sequence is the parent's
// cversion, a Java int, written with "%010d": past 2^31 creations it is
// negative, "-2147483648" up to "-000000001", then wraps to "0000000000".
var leaseTail = regexp.MustCompile(`dc(\d\d)-m(\d\d)-(\d{10}|-\d{9,10})$`)

// ParseLeaseName returns the slot and sequence number of a lease node name
// (the last path element or a full path). The sequence is the number as
// ZooKeeper means it, its 32 bits read unsigned (0..2^32-1), so a name past
// the 2^31 wrap sorts after the ones before it; compare sequences with
// LeaseSeqBefore, which also orders across the wrap at 2^32.
func ParseLeaseName(name string) (snowflake.Slot, int64, error) {
	name = path.Base(name)
	m := leaseTail.FindStringSubmatch(name)
	if m == nil {
		return snowflake.Slot{}, 0, fmt.Errorf("%w: %q", ErrBadLeaseName, name)
	}
	dc, _ := strconv.Atoi(m[1])
	mc, _ := strconv.Atoi(m[2])
	cv, err := strconv.ParseInt(m[3], 10, 32)
	if err != nil {
		return snowflake.Slot{}, 0, fmt.Errorf("%w: %q: sequence %s is not a ZooKeeper cversion (a 32-bit int)", ErrBadLeaseName, name, m[3])
	}
	seq := int64(uint32(int32(cv)))
	s := snowflake.Slot{Datacenter: dc, Machine: mc}
	if err := s.Validate(); err != nil {
		return snowflake.Slot{}, 0, fmt.Errorf("%w: %q: %w", ErrBadLeaseName, name, err)
	}
	return s, seq, nil
}

// LeaseSeqBefore reports whether a lease node with sequence a (as
// ParseLeaseName returns it) was created before one with sequence b under the
// same parent. The sequence counts modulo 2^32, so it compares by serial
// number arithmetic: right across any wrap while the live nodes were created
// within 2^31 of each other, which a slot's contenders always are.
func LeaseSeqBefore(a, b int64) bool { return int32(uint32(a)-uint32(b)) < 0 }

// Holder is the lowest-sequence lease node of one slot: the one that holds
// it.
type Holder struct {
	// Name is the node's name in leases/.
	Name string
	// Seq is its sequence, as ParseLeaseName returns it.
	Seq int64
}

// Holders maps each slot named in a listing of leases/ to its lowest
// sequence node, the one that holds it.
func Holders(names []string) map[snowflake.Slot]Holder {
	h := make(map[snowflake.Slot]Holder, len(names))
	for _, n := range names {
		s, seq, err := ParseLeaseName(n)
		if err != nil {
			continue
		}
		if cur, ok := h[s]; !ok || LeaseSeqBefore(seq, cur.Seq) {
			h[s] = Holder{Name: n, Seq: seq}
		}
	}
	return h
}
