package coordinator

import "github.com/snowfleet/snowfleet/coordinator/tree"

// tenure is our tenure as the fenced write of rec records it: rec's
// reservation is the ceiling this write confirms, and every ID we issued
// lies at or below it (the generator's ceiling moves down only to what
// the next write confirms, never below what it issued). The history rides
// on the writes the lease makes anyway: no write of its own, none on the
// ID path.
func (l *wonLease) tenure(rec tree.SlotRecord) tree.Tenure {
	h := l.holder
	return tree.Tenure{Lease: l.name, Host: h.Host, PID: h.PID, Program: h.Program, Version: h.Version, Kind: h.Kind,
		StartMs: l.startMs, FloorMs: l.floor, CeilingMs: rec.ReservedUntilMs, LastMs: rec.LastMs, Released: l.releasing}
}
