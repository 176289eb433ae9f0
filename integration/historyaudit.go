//go:build integration

package integration

import (
	"context"
	"fmt"
	"slices"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// HistoryAudit is every collected ID placed in its slot's history (#41
// item 4), and no two tenures of a slot overlapping: an ID that a direct
// stream got from one container lies in a tenure of that container (a
// lease node's host is the container's short ID); every other ID in some
// tenure. An ID may also fall before the
// recorded history (tenures dropped to keep a slot node small, or from
// before a root was made again or a slot node repaired) or in a span a
// restore lost (recover records it); none may fall in no tenure.
type HistoryAudit struct {
	IDs, Own, InTenure, Before, Lost int
	Problems                         []string
}

func (a HistoryAudit) String() string {
	return fmt.Sprintf("%d IDs: %d in a tenure (%d of them checked against the container that served them), %d before the recorded history, %d in spans a restore lost, %d problems",
		a.IDs, a.InTenure, a.Own, a.Before, a.Lost, len(a.Problems))
}

// AuditHistory reads every slot's history from ZooKeeper and places every
// ID the collector got in it. Run it once the collector has stopped.
func AuditHistory(ctx context.Context, st *Stack, col *Collector) HistoryAudit {
	var a HistoryAudit
	conn, err := st.DialZK(ctx)
	if err != nil {
		a.Problems = append(a.Problems, fmt.Sprintf("dial ZooKeeper: %v", err))
		return a
	}
	defer conn.Close()
	sm, err := tree.ReadSlotMap(conn, zkRoot)
	if err != nil {
		a.Problems = append(a.Problems, fmt.Sprintf("read the slot map: %v", err))
		return a
	}
	// The history on its own: the tenures of a slot never share a
	// timestamp.
	for s, rec := range sm.Slots {
		for _, o := range rec.History.Overlaps() {
			a.Problems = append(a.Problems, fmt.Sprintf("%s: tenures %s (%s) and %s (%s) overlap in ms (%d, %d]",
				s, o.A.Lease, o.A.Host, o.B.Lease, o.B.Host, o.FromMs, o.ToMs))
		}
	}
	col.mu.Lock()
	streams := slices.Clone(col.streams)
	col.mu.Unlock()
	wrong := 0
	for _, s := range streams {
		s.mu.Lock()
		ids := slices.Clone(s.ids)
		s.mu.Unlock()
		host := ""
		if len(s.container) >= 12 {
			host = s.container[:12]
		}
		for _, id := range ids {
			f, err := snowflake.Decode(id)
			if err != nil {
				continue // the checks of Check report it
			}
			a.IDs++
			tn, where := sm.Slots[f.Slot()].History.Place(f.UnixMs)
			switch {
			case where == tree.BeforeHistory:
				a.Before++
			case where == tree.LostSpan:
				a.Lost++
			case where == tree.NoTenure || host != "" && tn.Host != host:
				if wrong++; wrong <= 5 {
					a.Problems = append(a.Problems, fmt.Sprintf("ID %d (%s, ms %d) from stream %s: %v, holder %q (%s), want a tenure of container %q",
						id, f.Slot(), f.UnixMs, s.name, where, tn.Host, tn.Lease, host))
				}
			default:
				a.InTenure++
				if host != "" {
					a.Own++
				}
			}
		}
	}
	if wrong > 5 {
		a.Problems = append(a.Problems, fmt.Sprintf("... %d IDs in all not in the tenure of the process that issued them", wrong))
	}
	return a
}
