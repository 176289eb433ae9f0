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

// slotsView reads the map (bounded, one read at a time) and classifies
// every slot. A failed read is a view with Error set, never a failure.
func (s *Server) slotsView(ctx context.Context, sem chan struct{}) tree.SlotMapView {
	r, ok := s.lease.(slotMapReader)
	if !ok {
		return tree.Unreadable("", time.Now(), "this worker's lease cannot read the slot map")
	}
	ctx, cancel := context.WithTimeout(ctx, slotsReadTimeout)
	defer cancel()
	select {
	case sem <- struct{}{}:
		defer func() { <-sem }()
	case <-ctx.Done():
		return tree.Unreadable(r.Root(), time.Now(), "an earlier read of the slot map has not finished (ZooKeeper slow or unreachable)")
	}
	m, err := r.ReadSlotMap(ctx)
	if err != nil {
		why := "cannot read the slot map from ZooKeeper: " + err.Error()
		if errors.Is(err, coordinator.ErrNoSession) {
			why = "not connected to ZooKeeper yet: " + err.Error()
		}
		return tree.Unreadable(r.Root(), time.Now(), why)
	}
	return m.View(r.Root(), time.Now())
}

// handleSlots adds /slots (HTML) and /slots.json to mux. Any query string
// is ignored; a map that cannot be read is a banner (or "error" in the
// JSON) with status 200, since the page itself works.
func (s *Server) handleSlots(mux *http.ServeMux) {
	sem := make(chan struct{}, 1) // one ZooKeeper read of the map at a time
	c := &slotsCache{}
	view := func(ctx context.Context) tree.SlotMapView {
		return c.get(ctx, func(ctx context.Context) tree.SlotMapView { return s.slotsView(ctx, sem) })
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
	v    tree.SlotMapView
	read time.Time
}

// get serves the cached view while it is younger than slotsCacheTTL, and
// reads a new one (with read, one at a time) otherwise. A view with an
// error is not kept: the next request tries again.
func (c *slotsCache) get(ctx context.Context, read func(context.Context) tree.SlotMapView) tree.SlotMapView {
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
