package tree

import (
	"encoding/json"
	"strings"
	"testing"
)

// The history stays within MaxHistoryBytes however many tenures a slot
// has had: the oldest are dropped and counted, and their IDs read as
// before the recorded history, never as in no tenure.
func TestHistoryCompacts(t *testing.T) {
	t.Parallel()
	var h History
	floor := int64(1_700_000_000_000)
	for i := range 100 {
		h = h.With(Tenure{Lease: "_c_0123456789abcdef0123456789abcdef-dc03-m01-" + strings.Repeat("0", 9) + string(rune('a'+i%26)) + string(rune('a'+i/26)),
			Host: "worker-0123456789", PID: 4242, Program: "snowflaked", Version: "v1.2.3", Kind: "worker",
			StartMs: floor, FloorMs: floor, CeilingMs: floor + 40_000, LastMs: floor + 39_000, Released: true})
		floor += 40_000
	}
	b, _ := json.Marshal(h)
	if len(b) > MaxHistoryBytes {
		t.Fatalf("history of %d bytes, over %d", len(b), MaxHistoryBytes)
	}
	if h.Dropped+len(h.Tenures) != 100 || h.Dropped == 0 {
		t.Fatalf("%d kept, %d dropped: want 100 in all, some dropped", len(h.Tenures), h.Dropped)
	}
	if h.FromMs != h.Tenures[0].FloorMs {
		t.Fatalf("history from %d, want the oldest kept tenure's floor %d (the last dropped one's ceiling)", h.FromMs, h.Tenures[0].FloorMs)
	}
	if _, where := h.Place(h.FromMs - 5_000); where != BeforeHistory {
		t.Fatalf("an ID of a dropped tenure placed %v", where)
	}
	if tn, where := h.Place(h.Tenures[3].FloorMs + 1); where != InTenure || tn.Lease != h.Tenures[3].Lease {
		t.Fatalf("an ID of a kept tenure placed %v in %q", where, tn.Lease)
	}
}

// A later write of the same lease replaces its tenure; a record without a
// history encodes without the key, as before histories, and one with it
// decodes back to the same history.
func TestHistoryInTheRecord(t *testing.T) {
	t.Parallel()
	h := History{}.With(Tenure{Lease: "n1", FloorMs: 10, CeilingMs: 20})
	h = h.With(Tenure{Lease: "n1", FloorMs: 10, CeilingMs: 30})
	if len(h.Tenures) != 1 || h.Tenures[0].CeilingMs != 30 {
		t.Fatalf("history %+v: want n1's one tenure, ceiling 30", h)
	}
	old := EncodeSlot(SlotRecord{ReservedUntilMs: 1_700_000_000_000})
	if strings.Contains(string(old), "history") {
		t.Fatalf("a record without a history encodes one: %s", old)
	}
	rec, err := DecodeSlot(EncodeSlot(SlotRecord{ReservedUntilMs: 1_700_000_000_000, History: h}))
	if err != nil || len(rec.History.Tenures) != 1 || rec.History.Tenures[0] != h.Tenures[0] {
		t.Fatalf("decoded %+v, %v: want the history written", rec.History, err)
	}
}

// Tenures that follow each other (each floor at or above the last
// ceiling, as the lease writes them, a released one ending low) overlap
// nowhere; a holder that took the slot as if nobody had held it (floor 0)
// or wrote past its successor's floor overlaps, and Overlaps names both
// tenures and the span they share.
func TestHistoryOverlaps(t *testing.T) {
	t.Parallel()
	var h History
	h = h.With(Tenure{Lease: "a", FloorMs: 100, CeilingMs: 200})
	h = h.With(Tenure{Lease: "b", FloorMs: 200, CeilingMs: 300, LastMs: 250, Released: true})
	h = h.With(Tenure{Lease: "r", Kind: LostToRestore, FloorMs: 300, CeilingMs: 400})
	h = h.With(Tenure{Lease: "c", FloorMs: 400, CeilingMs: 400}) // claimed, nothing confirmed above
	h = h.With(Tenure{Lease: "d", FloorMs: 400, CeilingMs: 500})
	if o := h.Overlaps(); len(o) != 0 {
		t.Fatalf("tenures end to end overlap: %+v", o)
	}
	zero := h.With(Tenure{Lease: "e", FloorMs: 0, CeilingMs: 600})
	if o := zero.Overlaps(); len(o) != 5-1 { // every tenure but c, which holds no timestamp
		t.Fatalf("a tenure from floor 0 overlaps %d tenures, want 4: %+v", len(o), o)
	}
	past := h.With(Tenure{Lease: "d2", FloorMs: 450, CeilingMs: 700})
	o := past.Overlaps()
	if len(o) != 1 || o[0].A.Lease != "d" || o[0].B.Lease != "d2" || o[0].FromMs != 450 || o[0].ToMs != 500 {
		t.Fatalf("a successor starting at 450 under d's ceiling 500: overlaps %+v, want d and d2 in (450, 500]", o)
	}
}
