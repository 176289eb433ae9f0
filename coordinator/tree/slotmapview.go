package tree

import (
	"time"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// Slot states in a SlotMapView.
const (
	SlotHeld     = "held"     // a live lease node holds it
	SlotReserved = "reserved" // no holder, but its reservation is still ahead of the clock: a successor waits it out
	SlotFree     = "free"     // claimable now
	SlotOutside  = "outside"  // in a datacenter this fleet does not own
	SlotDamaged  = "damaged"  // its slot node holds no valid slot record: nobody claims it until an operator writes one
)

// SlotMapViewShape names SlotMapView's keys, in order, for -h texts and
// the README (TestSlotMapViewShapeNamesEveryKey holds the three together).
const SlotMapViewShape = "{root, now, now_ms, error, datacenters, fleet_datacenters, owned, held, embedded, free, used, counts: {...}, slots: [...], standbys: [...], damaged: {...}}"

// SlotMapView is the slot map as people and programs read it: the one
// JSON schema that a worker's /slots.json serves (and its /slots page
// draws) and snowflakectl slots --json prints, documented in
// coordinator/README.md ("The slot map as JSON"). Times are given as Unix
// ms for programs and most also as RFC 3339 for people.
type SlotMapView struct {
	Root  string    `json:"root"`
	Now   time.Time `json:"now"`
	NowMs int64     `json:"now_ms"`
	// Error is why the map could not be read (a worker's page; snowflakectl
	// fails instead); the counts and lists are then empty.
	Error string `json:"error,omitempty"`
	// Datacenters are the ranges the root owns ("0-3,8"), FleetDatacenters
	// the same as a list, Owned their slots.
	Datacenters      string `json:"datacenters"`
	FleetDatacenters []int  `json:"fleet_datacenters"`
	Owned            int    `json:"owned"`
	// Held counts the live lease nodes, Embedded those of embedded leases
	// (in Held too), Free the owned slots no lease holds (claimable now or
	// once a reservation passes: Counts tells them apart), Used the slot
	// nodes some holder ever wrote.
	Held     int `json:"held"`
	Embedded int `json:"embedded"`
	Free     int `json:"free"`
	Used     int `json:"used"`
	// Counts are the 1,024 slots by state (SlotHeld...).
	Counts map[string]int `json:"counts"`
	// Slots are all 1,024 in a worker's view, datacenter-major; snowflakectl
	// prints the held ones (with --all, every one ever used) as its table
	// does.
	Slots []SlotView `json:"slots"`
	// Standbys are the workers waiting for a slot; while one waits for a
	// range, its holders reserve only --standby-horizon ahead.
	Standbys []StandbyInfo `json:"standbys"`
	// Damaged are the damaged slot nodes, slot -> why (each slot's Damage).
	Damaged map[string]string `json:"damaged,omitempty"`
}

// SlotView is one slot: its state, its holder if any, and its timeline.
type SlotView struct {
	Slot       string `json:"slot"`
	Datacenter int    `json:"datacenter"`
	Machine    int    `json:"machine"`
	State      string `json:"state"`
	// Held: a live lease node holds the slot (state held, or damaged under
	// a holder); LeaseNode and the holder's fields are then set.
	Held bool `json:"held"`
	// Damage is why the slot node is no valid record (state damaged).
	Damage string `json:"damage,omitempty"`
	// Holder is the holding lease node, or for a slot cooling down the
	// last holder, gone.
	Holder    string `json:"holder,omitempty"`
	LeaseNode string `json:"lease_node,omitempty"`
	// Kind is worker (it serves IDs at Addr) or embedded (a Go program
	// issuing IDs to itself, named by Program).
	Kind    string `json:"kind,omitempty"`
	Program string `json:"program,omitempty"`
	Addr    string `json:"addr,omitempty"`
	HTTP    string `json:"http,omitempty"`
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Version string `json:"version,omitempty"`
	// HeldSince is when the holder made its lease node; Since is the same
	// (snowflakectl's name for it before the two views were one).
	HeldSince *time.Time `json:"held_since,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	// The slot node's record: the reservation and the last timestamp
	// issued (as of the holder's last renew), in ms and as times; when
	// it was written, by which lease node (Writer).
	ReservedUntilMs int64      `json:"reserved_until_ms,omitempty"`
	ReservedUntil   *time.Time `json:"reserved_until,omitempty"`
	LastMs          int64      `json:"last_ms,omitempty"`
	LastIssued      *time.Time `json:"last_issued,omitempty"`
	UpdatedMs       int64      `json:"updated_ms,omitempty"`
	Writer          string     `json:"writer,omitempty"`
	// AheadMs is reserved_until_ms - now_ms, IdleMs now_ms - last_ms.
	AheadMs *int64 `json:"ahead_ms,omitempty"`
	IdleMs  *int64 `json:"idle_ms,omitempty"`
}

// View is the map as read at now under root: every one of the 1,024
// slots with its state.
func (m SlotMap) View(root string, now time.Time) SlotMapView {
	now = now.UTC()
	v := SlotMapView{Root: root, Now: now, NowMs: now.UnixMilli(), Counts: map[string]int{},
		Slots: make([]SlotView, 0, snowflake.Slots), Standbys: append([]StandbyInfo{}, m.Standbys...)}
	owned := m.Owned
	if owned == 0 {
		owned = AllDatacenters
	}
	v.Datacenters, v.Owned, v.Held, v.Free = owned.String(), owned.Slots(), len(m.Leases), m.Free()
	for dc := 0; dc <= snowflake.MaxDatacenter; dc++ {
		if owned.Has(dc) {
			v.FleetDatacenters = append(v.FleetDatacenters, dc)
		}
	}
	held := make(map[snowflake.Slot]zklayout.LeaseInfo, len(m.Leases))
	for _, l := range m.Leases {
		held[l.Slot] = l
		if l.Kind == zklayout.KindEmbedded {
			v.Embedded++
		}
	}
	for _, rec := range m.Slots {
		if rec.Holder != "" { // made with the root but never held: not used
			v.Used++
		}
	}
	for i := range snowflake.Slots {
		s := snowflake.SlotAt(i)
		sv := SlotView{Slot: s.String(), Datacenter: s.Datacenter, Machine: s.Machine}
		rec, hasRec := m.Slots[s]
		if hasRec {
			sv.timeline(rec, v.NowMs)
		}
		l, isHeld := held[s]
		if isHeld {
			sv.holder(l)
		}
		damage, isDamaged := m.Damaged[s]
		switch {
		case isDamaged:
			// Before held: a holder lets go of a slot whose node it cannot
			// read, and no claimer takes it.
			sv.State, sv.Damage = SlotDamaged, damage
			if v.Damaged == nil {
				v.Damaged = map[string]string{}
			}
			v.Damaged[sv.Slot] = damage
		case isHeld:
			sv.State = SlotHeld
		case rec.ReservedUntilMs > v.NowMs:
			sv.State = SlotReserved
			sv.Holder = rec.Holder // the last holder, gone
		case owned.Has(s.Datacenter):
			sv.State = SlotFree
		default:
			sv.State = SlotOutside
		}
		v.Counts[sv.State]++
		v.Slots = append(v.Slots, sv)
	}
	return v
}

// holder fills in the lease node holding the slot.
func (sv *SlotView) holder(l zklayout.LeaseInfo) {
	sv.Held, sv.Holder, sv.LeaseNode = true, l.Node, l.Node
	sv.Kind, sv.Program, sv.Addr, sv.HTTP, sv.Host, sv.PID, sv.Version = l.Kind, l.Program, l.Addr, l.HTTP, l.Host, l.PID, l.Version
	if !l.Since.IsZero() {
		since := l.Since.UTC()
		sv.HeldSince, sv.Since = &since, &since
	}
}

// timeline fills in the slot node's record, and how it stands at nowMs.
func (sv *SlotView) timeline(rec SlotRecord, nowMs int64) {
	sv.ReservedUntilMs, sv.LastMs, sv.UpdatedMs, sv.Writer = rec.ReservedUntilMs, rec.LastMs, rec.UpdatedMs, rec.Holder
	sv.ReservedUntil, sv.LastIssued = msTime(rec.ReservedUntilMs), msTime(rec.LastMs)
	ahead := rec.ReservedUntilMs - nowMs
	sv.AheadMs = &ahead
	if rec.LastMs > 0 {
		idle := nowMs - rec.LastMs
		sv.IdleMs = &idle
	}
}

func msTime(ms int64) *time.Time {
	if ms <= 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// Unreadable is the view of a map that could not be read: why, and no
// slots.
func Unreadable(root string, now time.Time, why string) SlotMapView {
	now = now.UTC()
	return SlotMapView{Root: root, Now: now, NowMs: now.UnixMilli(), Error: why, Counts: map[string]int{},
		Slots: []SlotView{}, Standbys: []StandbyInfo{}}
}
