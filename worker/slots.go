package worker

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// slotMapReader is what /slots reads the map through: a
// *coordinator.Coordinator, which reads it on a session of its own, not
// the lease's.
type slotMapReader interface {
	ReadSlotMap(ctx context.Context) (tree.SlotMap, error)
	Root() string
}

// slotsReadTimeout bounds one read of the map for the page: ZooKeeper
// unreachable gives a banner after this long, not a hung request.
const slotsReadTimeout = 3 * time.Second

// Slot states on the page.
const (
	SlotHeld     = "held"     // a live lease node holds it
	SlotReserved = "reserved" // no holder, but its reservation is still ahead of the clock: a successor waits it out
	SlotFree     = "free"     // claimable now
	SlotOutside  = "outside"  // in a datacenter this fleet does not use
	SlotDamaged  = "damaged"  // its slot node holds no slot record: nobody claims it until an operator writes one
)

// SlotsView is the slot map as /slots draws it and /slots.json serves it.
type SlotsView struct {
	// Root is the fleet's root znode; Now the time the map was read at.
	Root string    `json:"root"`
	Now  time.Time `json:"now"`
	// Error is why the map could not be read ("" when it was); Slots are
	// then empty.
	Error string `json:"error,omitempty"`
	// Datacenters are the fleet's: those its root owns (snowflakectl init
	// --datacenters), all 32 for a root made without ranges.
	Datacenters []int `json:"fleet_datacenters"`
	// Counts are the slots in each state.
	Counts map[string]int `json:"counts"`
	// Embedded counts the held slots whose holder is an embedded lease (a
	// Go program issuing IDs to itself); they are in Counts["held"] too.
	Embedded int `json:"embedded"`
	// Slots are all 1,024, datacenter-major (dc00-m00, dc00-m01, ...).
	Slots []SlotView `json:"slots,omitempty"`
}

// SlotView is one slot: its state, and its holder and timeline if any.
type SlotView struct {
	Slot       string `json:"slot"`
	Datacenter int    `json:"datacenter"`
	Machine    int    `json:"machine"`
	State      string `json:"state"`
	// Damage is why the slot node could not be read as a slot record
	// (state damaged).
	Damage string `json:"damage,omitempty"`
	// Holder is the lease node; Kind says what holds it (worker, or
	// embedded: a Go program issuing IDs to itself, named by Program, that
	// serves nobody); Addr, HTTP, Host, PID, Version are its holder's.
	Holder  string `json:"holder,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Program string `json:"program,omitempty"`
	Addr    string `json:"addr,omitempty"`
	HTTP    string `json:"http,omitempty"`
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Version string `json:"version,omitempty"`
	// HeldSince is when the holder created its lease node.
	HeldSince *time.Time `json:"held_since,omitempty"`
	// ReservedUntil and LastIssued come from the slot node (its timeline).
	ReservedUntil *time.Time `json:"reserved_until,omitempty"`
	LastIssued    *time.Time `json:"last_issued,omitempty"`
}

// slotsView reads the map (bounded, one read at a time) and classifies
// every slot. A failed read is a view with Error set, never a failure.
func (s *Server) slotsView(ctx context.Context, sem chan struct{}) SlotsView {
	v := SlotsView{Now: time.Now().UTC(), Counts: map[string]int{}}
	r, ok := s.lease.(slotMapReader)
	if !ok {
		v.Error = "this worker's lease cannot read the slot map"
		return v
	}
	v.Root = r.Root()
	ctx, cancel := context.WithTimeout(ctx, slotsReadTimeout)
	defer cancel()
	select {
	case sem <- struct{}{}:
		defer func() { <-sem }()
	case <-ctx.Done():
		v.Error = "an earlier read of the slot map has not finished (ZooKeeper slow or unreachable)"
		return v
	}
	m, err := r.ReadSlotMap(ctx)
	if err != nil {
		if errors.Is(err, coordinator.ErrNoSession) {
			v.Error = "not connected to ZooKeeper yet: " + err.Error()
		} else {
			v.Error = "cannot read the slot map from ZooKeeper: " + err.Error()
		}
		return v
	}
	return classify(v, m)
}

// classify fills v from the map read: each slot's state and details. The
// fleet's datacenters are those its root owns (all 32 for a root made
// without ranges); a slot outside them belongs to no one here.
func classify(v SlotsView, m tree.SlotMap) SlotsView {
	owned := m.Owned
	if owned == 0 {
		owned = tree.AllDatacenters
	}
	held := map[snowflake.Slot]zklayout.LeaseInfo{}
	for _, l := range m.Leases {
		held[l.Slot] = l
	}
	for dc := 0; dc <= snowflake.MaxDatacenter; dc++ {
		if owned.Has(dc) {
			v.Datacenters = append(v.Datacenters, dc)
		}
	}
	nowMs := v.Now.UnixMilli()
	v.Slots = make([]SlotView, 0, (snowflake.MaxDatacenter+1)*(snowflake.MaxMachine+1))
	for i := 0; i < (snowflake.MaxDatacenter+1)*(snowflake.MaxMachine+1); i++ {
		s := snowflake.SlotAt(i)
		sv := SlotView{Slot: s.String(), Datacenter: s.Datacenter, Machine: s.Machine}
		if rec, ok := m.Slots[s]; ok {
			sv.ReservedUntil = msTime(rec.ReservedUntilMs)
			sv.LastIssued = msTime(rec.LastMs)
		}
		l, isHeld := held[s]
		damage, isDamaged := m.Damaged[s]
		switch {
		case isDamaged:
			// Before held: a holder lets go of a slot whose node it cannot
			// read, and no claimer takes it.
			sv.State, sv.Damage = SlotDamaged, damage
			sv.Holder = l.Node
		case isHeld:
			sv.State = SlotHeld
			sv.Holder, sv.Addr, sv.HTTP, sv.Host, sv.PID, sv.Version = l.Node, l.Addr, l.HTTP, l.Host, l.PID, l.Version
			sv.Kind, sv.Program = l.Kind, l.Program
			if l.Kind == zklayout.KindEmbedded {
				v.Embedded++
			}
			if !l.Since.IsZero() {
				since := l.Since.UTC()
				sv.HeldSince = &since
			}
		case m.Slots[s].ReservedUntilMs > nowMs:
			sv.State = SlotReserved
			sv.Holder = m.Slots[s].Holder // the last holder, gone
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

func msTime(ms int64) *time.Time {
	if ms <= 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// handleSlots adds /slots (HTML) and /slots.json to mux. Any query string
// is ignored; a map that cannot be read is a banner (or "error" in the
// JSON) with status 200, since the page itself works.
func (s *Server) handleSlots(mux *http.ServeMux) {
	sem := make(chan struct{}, 1) // one ZooKeeper read of the map at a time
	c := &slotsCache{}
	view := func(ctx context.Context) SlotsView {
		return c.get(ctx, func(ctx context.Context) SlotsView { return s.slotsView(ctx, sem) })
	}
	mux.HandleFunc("GET /slots", func(w http.ResponseWriter, r *http.Request) {
		v := view(r.Context())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := slotsPage.Execute(w, newSlotsPageData(v)); err != nil {
			s.log.Debug("render /slots", "error", err)
		}
	})
	mux.HandleFunc("GET /slots.json", func(w http.ResponseWriter, r *http.Request) {
		v := view(r.Context())
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	})
}

// slotsCacheTTL is how long a read of the slot map serves /slots and
// /slots.json: a read costs about 1,030 ZooKeeper requests, so the page is
// one read per slotsCacheTTL whatever the request rate (and whoever asks).
const slotsCacheTTL = 2 * time.Second

// slotsCache keeps the last view read without an error.
type slotsCache struct {
	mu   sync.Mutex
	v    SlotsView
	read time.Time
}

// get serves the cached view while it is younger than slotsCacheTTL, and
// reads a new one (with read, one at a time) otherwise. A view with an
// error is not kept: the next request tries again.
func (c *slotsCache) get(ctx context.Context, read func(context.Context) SlotsView) SlotsView {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.read.IsZero() && time.Since(c.read) < slotsCacheTTL {
		return c.v
	}
	v := read(ctx)
	if v.Error == "" {
		c.v, c.read = v, time.Now()
	}
	return v
}
