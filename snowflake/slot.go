package snowflake

import (
	"fmt"
	"regexp"
	"strconv"
)

// Slot is one (datacenter, machine) pair: the unit a worker leases.
type Slot struct {
	Datacenter int
	Machine    int
}

// SlotAt returns the slot with the given index 0..Slots-1 (datacenter major).
func SlotAt(i int) Slot {
	return Slot{Datacenter: i / (MaxMachine + 1), Machine: i % (MaxMachine + 1)}
}

// Index is the slot's position 0..Slots-1 (datacenter major).
func (s Slot) Index() int { return s.Datacenter*(MaxMachine+1) + s.Machine }

// String is the slot's name in ZooKeeper, e.g. "dc07-m13".
func (s Slot) String() string { return fmt.Sprintf("dc%02d-m%02d", s.Datacenter, s.Machine) }

// MarshalText makes a slot its name in JSON too (structured logs, map keys),
// not {"Datacenter":7,"Machine":13}.
func (s Slot) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Validate reports a datacenter or machine out of range.
func (s Slot) Validate() error {
	if err := checkRange("datacenter", int64(s.Datacenter), 0, MaxDatacenter); err != nil {
		return err
	}
	return checkRange("machine", int64(s.Machine), 0, MaxMachine)
}

var slotName = regexp.MustCompile(`^dc(\d\d)-m(\d\d)$`)

// ParseSlot parses a name such as "dc07-m13".
func ParseSlot(name string) (Slot, error) {
	m := slotName.FindStringSubmatch(name)
	if m == nil {
		return Slot{}, fmt.Errorf("slot %q: want the form dcNN-mNN", name)
	}
	dc, _ := strconv.Atoi(m[1])
	mc, _ := strconv.Atoi(m[2])
	s := Slot{Datacenter: dc, Machine: mc}
	if err := s.Validate(); err != nil {
		return Slot{}, fmt.Errorf("slot %q: %w", name, err)
	}
	return s, nil
}
