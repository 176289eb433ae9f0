package worker

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/snowflake"
)

// slotInfo exports snowflake_worker_slot_info{slot,datacenter,machine} = 1
// while a lease is held (none otherwise), read from the lease at scrape
// time, so it can never disagree with /status: a dashboard joins it to any
// other worker metric to show which slot a pod holds.
type slotInfo struct {
	lease IDSource
	desc  *prometheus.Desc
}

func newSlotInfo(lease IDSource) *slotInfo {
	return &slotInfo{lease: lease, desc: prometheus.NewDesc("snowflake_worker_slot_info",
		"1 while this worker holds the lease of the slot named by the labels; absent while it holds none.",
		[]string{"slot", "datacenter", "machine"}, nil)}
}

func (s *slotInfo) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *slotInfo) Collect(ch chan<- prometheus.Metric) {
	slot, err := snowflake.ParseSlot(s.lease.Status().Slot)
	if err != nil {
		return // no lease held
	}
	ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, 1,
		slot.String(), strconv.Itoa(slot.Datacenter), strconv.Itoa(slot.Machine))
}
