package worker

import (
	"context"
	"testing"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/snowflake"
)

// TestSequenceStartSpread: the coordinator's SequenceStart reaches the
// lease's generator. With spread, a millisecond's first ID served over RESP
// is not at sequence 0 (the second millisecond entered starts at 2531);
// with zero, every millisecond starts at 0. No timing: IDs are drawn until
// three milliseconds were seen.
func TestSequenceStartSpread(t *testing.T) {
	zk := startZK(t)
	for _, mode := range []snowflake.SequenceStart{snowflake.StartZero, snowflake.StartSpread} {
		t.Run(mode.String(), func(t *testing.T) {
			w := startWorkerWith(t, zk.Addr(), true, nil, func(cc *coordinator.Config) { cc.SequenceStart = mode })
			c := w.client()
			first := map[int64]int{} // ms -> the sequence of its first ID
			var last int64
			for len(first) < 3 {
				id, err := c.Do(context.Background(), "NEXTID").Int64()
				if err != nil {
					t.Fatal(err)
				}
				if id <= last {
					t.Fatalf("%d after %d", id, last)
				}
				last = id
				f, _ := snowflake.Decode(id)
				if _, seen := first[f.UnixMs]; !seen {
					first[f.UnixMs] = f.Sequence
				}
			}
			nonzero := 0
			for _, seq := range first {
				if seq != 0 {
					nonzero++
				}
			}
			if mode == snowflake.StartZero && nonzero != 0 || mode == snowflake.StartSpread && nonzero == 0 {
				t.Fatalf("%s: milliseconds' first sequences %v", mode, first)
			}
		})
	}
}
