package snowflake

import "fmt"

// SequenceStart is Config.SequenceStart: the sequence number each
// millisecond's first ID takes.
type SequenceStart int

const (
	// StartZero starts every millisecond at sequence 0. Below one ID per
	// millisecond almost every ID then ends in twelve zero bits, so id % N
	// puts nearly every row in one table shard.
	StartZero SequenceStart = iota
	// StartSpread starts the k-th millisecond the generator enters at
	// k*spreadStride mod 4096 (a Weyl sequence), and at 0 after a
	// millisecond that a request found used up: the low bits of the IDs
	// are even at any rate, and the generator's cap is kept at full load.
	StartSpread
)

// spreadStride is odd, so the low j bits of k*spreadStride run through all
// 2^j values every 2^j milliseconds: id % 2^j is even to within one ID at
// any rate, for every j <= 12. It is 4096/phi (the golden ratio), so that
// starts far apart follow each other and the carries into the timestamp
// bits mix: id % N is even for other N too (id % 10 within 0.1% at one ID
// per millisecond, where a start that carries on by one, as CosId's does,
// moves id % 10 by 5 a millisecond, 2^22 being 4 mod 10).
const spreadStride = 2531

func (s SequenceStart) String() string {
	if s == StartSpread {
		return "spread"
	}
	return "zero"
}

// ParseSequenceStart reads "zero" or "spread".
func ParseSequenceStart(s string) (SequenceStart, error) {
	switch s {
	case "zero":
		return StartZero, nil
	case "spread":
		return StartSpread, nil
	}
	return StartZero, fmt.Errorf("sequence start %q: want zero or spread", s)
}

// spreadStart is the first sequence number of the k-th millisecond entered
// for a run of n IDs: k*spreadStride mod 4096, folded so that the run fits
// in the millisecond (n = 4096 starts at 0).
func spreadStart(k uint64, n int64) int64 {
	s := int64(k*spreadStride) & MaxSequence
	if s > MaxBatch-n {
		s %= MaxBatch - n + 1
	}
	return s
}
