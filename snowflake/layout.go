package snowflake

import (
	"fmt"
	"time"
)

// Epoch is the Unix time in milliseconds that timestamp 0 stands for
// (2010-11-04T01:42:54.657Z, Twitter's epoch).
const Epoch int64 = 1288834974657

// Field widths in bits.
const (
	TimestampBits  = 41
	DatacenterBits = 5
	MachineBits    = 5
	SequenceBits   = 12
)

// Field limits.
const (
	MaxTimestamp  int64 = 1<<TimestampBits - 1 // ms since Epoch
	MaxDatacenter       = 1<<DatacenterBits - 1
	MaxMachine          = 1<<MachineBits - 1
	MaxSequence         = 1<<SequenceBits - 1
	// MaxBatch is the most IDs one NextN call returns: one millisecond's worth.
	MaxBatch = MaxSequence + 1
	// Slots is the number of (datacenter, machine) pairs.
	Slots = (MaxDatacenter + 1) * (MaxMachine + 1)
)

const (
	machineShift    = SequenceBits
	datacenterShift = SequenceBits + MachineBits
	timestampShift  = SequenceBits + MachineBits + DatacenterBits
)

// MinUnixMs and MaxUnixMs bound the Unix milliseconds an ID can carry.
const (
	MinUnixMs = Epoch
	MaxUnixMs = Epoch + MaxTimestamp
)

// Fields are the parts of an ID.
type Fields struct {
	UnixMs     int64 // Unix time in milliseconds
	Datacenter int
	Machine    int
	Sequence   int
}

// Time returns the timestamp as a time.Time in UTC.
func (f Fields) Time() time.Time { return time.UnixMilli(f.UnixMs).UTC() }

// Slot returns the (datacenter, machine) slot of the fields.
func (f Fields) Slot() Slot { return Slot{Datacenter: f.Datacenter, Machine: f.Machine} }

// RangeError says which field of an ID was out of range.
type RangeError struct {
	Field    string
	Value    int64
	Min, Max int64
}

func (e *RangeError) Error() string {
	return fmt.Sprintf("%s %d is out of range %d..%d", e.Field, e.Value, e.Min, e.Max)
}

func checkRange(field string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return &RangeError{Field: field, Value: v, Min: lo, Max: hi}
	}
	return nil
}

// Validate reports the first field out of range.
func (f Fields) Validate() error {
	if err := checkRange("timestamp (unix ms)", f.UnixMs, MinUnixMs, MaxUnixMs); err != nil {
		return err
	}
	if err := checkRange("datacenter", int64(f.Datacenter), 0, MaxDatacenter); err != nil {
		return err
	}
	if err := checkRange("machine", int64(f.Machine), 0, MaxMachine); err != nil {
		return err
	}
	return checkRange("sequence", int64(f.Sequence), 0, MaxSequence)
}

// Encode packs fields into an ID.
func Encode(f Fields) (int64, error) {
	if err := f.Validate(); err != nil {
		return 0, fmt.Errorf("encode: %w", err)
	}
	return pack(f.UnixMs-Epoch, f.Datacenter, f.Machine, f.Sequence), nil
}

// pack assumes valid input; the generator's hot path uses it.
func pack(ts int64, dc, m, seq int) int64 {
	return ts<<timestampShift | int64(dc)<<datacenterShift | int64(m)<<machineShift | int64(seq)
}

// Decode splits an ID into its fields. Every non-negative int64 is a valid ID.
func Decode(id int64) (Fields, error) {
	if id < 0 {
		return Fields{}, fmt.Errorf("decode: %w", &RangeError{Field: "id", Value: id, Min: 0, Max: 1<<63 - 1})
	}
	return Fields{
		UnixMs:     id>>timestampShift + Epoch,
		Datacenter: int(id >> datacenterShift & MaxDatacenter),
		Machine:    int(id >> machineShift & MaxMachine),
		Sequence:   int(id & MaxSequence),
	}, nil
}
