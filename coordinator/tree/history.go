package tree

import (
	"encoding/json"
	"fmt"
)

// MaxHistoryBytes bounds a slot record's history (its JSON): past it the
// oldest tenures are dropped and counted, so a slot node stays small
// whatever its age (ZooKeeper keeps every node in memory, and a reader
// fetches a slot's whole node).
const MaxHistoryBytes = 4096

// Tenure is one holder's time in a slot, as the fenced writes of its lease
// recorded it: every ID it issued has a timestamp in (FloorMs, CeilingMs].
// The holders of one slot are disjoint in time by construction (each
// starts above the reservation the last one confirmed), so an ID's
// timestamp names at most one tenure.
type Tenure struct {
	// Lease is the lease node the holder held (leases/<name>).
	Lease string `json:"lease"`
	// Host, PID, Program, Version and Kind name the holding process, from
	// its lease node.
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Program string `json:"program,omitempty"`
	Version string `json:"version,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// StartMs is the holder's clock when it claimed.
	StartMs int64 `json:"start_ms"`
	// FloorMs is the reservation the holder found: it issued only above it.
	FloorMs int64 `json:"floor_ms"`
	// CeilingMs is the last reservation the holder confirmed. Its
	// generator's ceiling only ever moved down to a value at or above what
	// it had issued, so every ID of the tenure lies at or below it.
	CeilingMs int64 `json:"ceiling_ms"`
	// LastMs is the last timestamp issued at the holder's latest write (0:
	// none yet); Released says that write was its release.
	LastMs   int64 `json:"last_ms,omitempty"`
	Released bool  `json:"released,omitempty"`
}

// LostToRestore is the Kind of the span recover records in a slot's
// history: the reservations between the restored record's and recover's
// were confirmed by tenures the restore took away. Its Lease names the
// recovery marker.
const LostToRestore = "lost-to-restore"

// Holds reports whether an ID with timestamp ms lies in the tenure.
func (t Tenure) Holds(ms int64) bool { return ms > t.FloorMs && ms <= t.CeilingMs }

// History is a slot's tenures, oldest first, as the slot record carries it.
type History struct {
	Tenures []Tenure `json:"tenures,omitempty"`
	// Dropped counts the oldest tenures dropped to keep the history within
	// MaxHistoryBytes; IDs at or below FromMs came before what is kept.
	Dropped int   `json:"dropped,omitempty"`
	FromMs  int64 `json:"from_ms,omitempty"`
}

// Empty reports a history with nothing in it (a record written by init,
// repair or a build before histories).
func (h History) Empty() bool { return len(h.Tenures) == 0 && h.Dropped == 0 }

// With returns h with t as its newest tenure: t replaces the newest one if
// it is the same lease (a later write of the same tenure), else it is
// added; the oldest are then dropped until the history fits
// MaxHistoryBytes. h is not modified.
func (h History) With(t Tenure) History {
	out := History{Dropped: h.Dropped, FromMs: h.FromMs}
	out.Tenures = make([]Tenure, 0, len(h.Tenures)+1)
	out.Tenures = append(out.Tenures, h.Tenures...)
	if n := len(out.Tenures); n > 0 && out.Tenures[n-1].Lease == t.Lease {
		out.Tenures[n-1] = t
	} else {
		out.Tenures = append(out.Tenures, t)
	}
	for len(out.Tenures) > 1 && out.size() > MaxHistoryBytes {
		old := out.Tenures[0]
		out.Tenures = out.Tenures[1:]
		out.Dropped++
		out.FromMs = max(out.FromMs, old.CeilingMs)
	}
	return out
}

// Ended returns h with its newest tenure, if it is lease's, ending at
// endMs: a holder that resumes its own slot from the last ID it issued
// (after it lost the lease, nobody having held the slot since) closes its
// earlier tenure there, so that the IDs above belong to the new one.
func (h History) Ended(lease string, endMs int64) History {
	n := len(h.Tenures)
	if n == 0 || h.Tenures[n-1].Lease != lease {
		return h
	}
	t := h.Tenures[n-1]
	t.CeilingMs = min(t.CeilingMs, max(endMs, t.FloorMs))
	return h.With(t)
}

func (h History) size() int {
	b, _ := json.Marshal(h)
	return len(b)
}

// TenureOverlap is two tenures of one slot whose intervals intersect: two
// holders that may both have issued IDs of the timestamps in (FromMs,
// ToMs]. The lease never records one (each holder starts above what the
// last one confirmed); a history that shows one was written by a broken
// or forged holder, or edited by hand.
type TenureOverlap struct {
	// A and B are the two tenures, A the older in the history.
	A, B Tenure
	// FromMs and ToMs bound the timestamps both hold: (FromMs, ToMs].
	FromMs, ToMs int64
}

// Overlaps returns every pair of h's tenures (and spans a restore lost)
// whose intervals intersect, older first.
func (h History) Overlaps() []TenureOverlap {
	var out []TenureOverlap
	for i, a := range h.Tenures {
		for _, b := range h.Tenures[i+1:] {
			from, to := max(a.FloorMs, b.FloorMs), min(a.CeilingMs, b.CeilingMs)
			if from < to {
				out = append(out, TenureOverlap{A: a, B: b, FromMs: from, ToMs: to})
			}
		}
	}
	return out
}

// Placement is where an ID's timestamp falls in a slot's history.
type Placement int

const (
	// InTenure: the timestamp lies in a recorded tenure.
	InTenure Placement = iota
	// BeforeHistory: at or below the start of what is recorded (dropped
	// tenures, or holders from before histories were kept).
	BeforeHistory
	// LostSpan: in a span whose tenures a restore from a backup took
	// away (recover records it): issued by holders nobody recorded, or
	// never issued.
	LostSpan
	// NoTenure: above the recorded history's start and in no tenure: not
	// issued by this fleet's holders of the slot (forged, from another
	// fleet sharing the datacenter, or issued past a confirmed ceiling).
	NoTenure
)

func (p Placement) String() string {
	switch p {
	case InTenure:
		return "in tenure"
	case BeforeHistory:
		return "before the recorded history"
	case NoTenure:
		return "in no tenure of this fleet"
	case LostSpan:
		return "in a span a restore lost (holders unrecorded)"
	}
	return fmt.Sprintf("placement(%d)", int(p))
}

// Place finds the tenure that holds an ID with timestamp ms.
func (h History) Place(ms int64) (Tenure, Placement) {
	if len(h.Tenures) == 0 || ms <= h.FromMs || ms <= h.Tenures[0].FloorMs {
		return Tenure{}, BeforeHistory
	}
	for _, t := range h.Tenures {
		if t.Holds(ms) {
			if t.Kind == LostToRestore {
				return t, LostSpan
			}
			return t, InTenure
		}
	}
	return Tenure{}, NoTenure
}
