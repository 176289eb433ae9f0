package coordinator

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// fleetFigures exports what this process knows of the fleet without
// reading leases/: the slot it holds and the datacenters its root owns.
// Prometheus sums them over the fleet (deploy/prometheus/rules.yml): a
// watch of leases/ in every process cost ZooKeeper a list, and a read of
// every new lease node, in every worker for every worker started or
// stopped, 2N(N+1) requests per replacement. Read at scrape time from the
// lease, so the figures can never disagree with Status.
type fleetFigures struct {
	c    *Coordinator
	held *prometheus.Desc
	dcs  *prometheus.Desc
	pin  *prometheus.Desc
}

// slotsPerDatacenter is how many slots one datacenter has (its machines).
const slotsPerDatacenter = snowflake.MaxMachine + 1

func newFleetFigures(c *Coordinator) *fleetFigures {
	return &fleetFigures{c: c,
		held: prometheus.NewDesc("snowflake_coordinator_held_slot_info",
			"1 while this process holds the lease of the slot named by the labels (kind worker or embedded); absent while it holds none. Counted over the fleet, it gives the slots held.",
			[]string{"root", "slot", "datacenter", "machine", "kind"}, nil),
		dcs: prometheus.NewDesc("snowflake_fleet_datacenter_slots",
			"Slots of each datacenter the fleet's root owns (32), once this process has read the root; no series for the others. Minus the held slots counted over the fleet, it gives the free ones.",
			[]string{"root", "datacenter"}, nil),
		pin: prometheus.NewDesc("snowflake_fleet_pin_info",
			"1 with the datacenter this worker is pinned to (--datacenter); absent when it takes any slot.",
			[]string{"datacenter"}, nil),
	}
}

func (f *fleetFigures) Describe(ch chan<- *prometheus.Desc) {
	ch <- f.held
	ch <- f.dcs
	ch <- f.pin
}

func (f *fleetFigures) Collect(ch chan<- prometheus.Metric) {
	root := f.c.cfg.Root
	if dc := f.c.cfg.Datacenter; dc >= 0 {
		ch <- prometheus.MustNewConstMetric(f.pin, prometheus.GaugeValue, 1, strconv.Itoa(dc))
	}
	f.c.mu.Lock()
	l := f.c.lease
	f.c.mu.Unlock()
	if l != nil {
		ch <- prometheus.MustNewConstMetric(f.held, prometheus.GaugeValue, 1, root, l.slot.String(),
			strconv.Itoa(l.slot.Datacenter), strconv.Itoa(l.slot.Machine), zklayout.LeaseKind(f.c.cfg.Kind))
	}
	owned := tree.DCSet(f.c.owned.Load())
	for dc := range snowflake.MaxDatacenter + 1 {
		if owned.Has(dc) {
			ch <- prometheus.MustNewConstMetric(f.dcs, prometheus.GaugeValue, slotsPerDatacenter, root, strconv.Itoa(dc))
		}
	}
}
