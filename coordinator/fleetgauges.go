package coordinator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// ErrNoSession: the coordinator is not running (Run has not started, or
// has returned), so the slot map is not read.
var ErrNoSession = errors.New("coordinator has no ZooKeeper session (not running)")

// SlotsPerDatacenter is how many slots one datacenter has (its machines).
const SlotsPerDatacenter = snowflake.MaxMachine + 1

// Fleet keeps the fleet gauges (held and free slots, in total and per
// datacenter) from one watch on leases/, on the coordinator's own session:
// every worker exports the same figures, so a dashboard or alert takes the
// max over workers and survives the loss of any of them.
type Fleet struct {
	c         *Coordinator
	held      prometheus.Gauge
	embedded  prometheus.Gauge
	free      prometheus.Gauge
	dcHeld    *prometheus.GaugeVec
	dcFree    *prometheus.GaugeVec
	updated   prometheus.Gauge
	pinInfo   *prometheus.GaugeVec
	pollEvery time.Duration
	// shown is the datacenter set the per-datacenter series were set for.
	shown tree.DCSet
}

// NewFleet makes the fleet gauges of c's fleet and registers them with reg
// (nil: none). Run keeps them current.
func NewFleet(c *Coordinator, reg prometheus.Registerer) (*Fleet, error) {
	f := &Fleet{
		c: c, pollEvery: 50 * time.Millisecond,
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snowflake_fleet_slots_held",
			Help: "Slots held by a live lease node, fleet-wide (from this worker's watch on leases/).",
		}),
		embedded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snowflake_fleet_embedded_slots_held",
			Help: "Slots held by embedded leases (Go programs issuing IDs to themselves, kind embedded), fleet-wide; counted in snowflake_fleet_slots_held too.",
		}),
		free: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snowflake_fleet_slots_free",
			Help: "Slots no lease node holds, fleet-wide, of those in the datacenters the fleet's root owns (all 1024 until the root is read).",
		}),
		dcHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snowflake_fleet_datacenter_slots_held",
			Help: "Slots held by a live lease node, per datacenter the fleet owns (of 32).",
		}, []string{"datacenter"}),
		dcFree: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snowflake_fleet_datacenter_slots_free",
			Help: "Slots no lease node holds, per datacenter the fleet owns (of 32).",
		}, []string{"datacenter"}),
		updated: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snowflake_fleet_watch_updated_timestamp_seconds",
			Help: "Unix time the fleet gauges were last read from leases/ (0: never); they keep the last good read while ZooKeeper is away.",
		}),
		pinInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snowflake_fleet_pin_info",
			Help: "1 with the datacenter this worker is pinned to (--datacenter); absent when it takes any slot.",
		}, []string{"datacenter"}),
	}
	if dc := c.cfg.Datacenter; dc >= 0 {
		f.pinInfo.WithLabelValues(strconv.Itoa(dc)).Set(1)
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{f.held, f.embedded, f.free, f.dcHeld, f.dcFree, f.updated, f.pinInfo} {
			if err := reg.Register(col); err != nil {
				return nil, fmt.Errorf("register fleet metrics: %w", err)
			}
		}
	}
	return f, nil
}

// Run watches leases/ on the coordinator's session (waiting for Run to
// dial it) and updates the gauges on every change, until ctx ends. It is
// an oklog/run actor's execute; it returns nil.
func (f *Fleet) Run(ctx context.Context) error {
	t := time.NewTicker(f.pollEvery)
	defer t.Stop()
	for f.c.conn.Load() == nil {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
	for leases := range zklayout.WatchLeases(ctx, f.c.conn.Load(), f.c.cfg.Root) {
		f.set(leases)
	}
	return nil
}

func (f *Fleet) set(leases []zklayout.LeaseInfo) {
	owned := tree.DCSet(f.c.owned.Load())
	if owned == 0 {
		owned = tree.AllDatacenters // the root is not read yet
	}
	var perDC [snowflake.MaxDatacenter + 1]int
	inside, embedded := 0, 0
	for _, l := range leases {
		if l.Kind == zklayout.KindEmbedded {
			embedded++
		}
		perDC[l.Slot.Datacenter]++
		if owned.Has(l.Slot.Datacenter) {
			inside++
		}
	}
	f.held.Set(float64(len(leases)))
	f.embedded.Set(float64(embedded))
	f.free.Set(float64(owned.Slots() - inside))
	// Only the owned datacenters have series: a datacenter of another fleet
	// is neither free nor held here. The set can change from "all" to the
	// root's once it is read, so stale series go first.
	if owned != f.shown {
		f.dcHeld.Reset()
		f.dcFree.Reset()
		f.shown = owned
	}
	for dc, n := range perDC {
		if owned.Has(dc) {
			f.dcHeld.WithLabelValues(strconv.Itoa(dc)).Set(float64(n))
			f.dcFree.WithLabelValues(strconv.Itoa(dc)).Set(float64(SlotsPerDatacenter - n))
		}
	}
	f.updated.Set(float64(time.Now().UnixNano()) / 1e9)
}

// ReadSlotMap reads the whole slot map, on a session of its own
// (mapSession), never the lease's, while Run runs. go-zookeeper has no call
// timeouts: the read runs on its own goroutine, and ctx bounds the wait
// (the read itself ends when ZooKeeper answers or the session fails), so a
// caller should let only one run at a time.
func (c *Coordinator) ReadSlotMap(ctx context.Context) (tree.SlotMap, error) {
	if !c.running.Load() {
		return tree.SlotMap{}, ErrNoSession
	}
	conn, err := c.maps.get(func() (*zk.Conn, error) {
		return zkconn.Connect(c.cfg.Servers, c.cfg.TLS, c.cfg.SessionTimeout, c.log.Named("slotmap"), nil)
	})
	if err != nil {
		return tree.SlotMap{}, fmt.Errorf("read slot map: %w", err)
	}
	var m tree.SlotMap
	answered, err := zkconn.Call(ctx, func() (err error) { m, err = tree.ReadSlotMap(conn, c.cfg.Root); return })
	if !answered {
		return tree.SlotMap{}, fmt.Errorf("read slot map: %w (%w)", ErrCallTimeout, err)
	}
	return m, err
}

// Datacenter is the datacenter the coordinator is pinned to, -1 for any.
func (c *Coordinator) Datacenter() int { return c.cfg.Datacenter }

// Root is the fleet's root znode.
func (c *Coordinator) Root() string { return c.cfg.Root }
