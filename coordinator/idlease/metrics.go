package idlease

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the lease's own, beside the coordinator's
// snowflake_coordinator_* (lease state, readiness, claims, losses).
type metrics struct {
	// wait times the calls that found no confirmed lease and waited: the
	// hot path records nothing.
	wait *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "snowflake_idlease_wait_seconds",
			Help:    "Time Next/NextN waited for a confirmed lease (claiming, ceiling reached, clock behind), by outcome: issued, not_ready (the caller's context ended), closed, stopped, error.",
			Buckets: []float64{.0001, .001, .01, .1, .5, 1, 2.5, 5, 10, 30},
		}, []string{"outcome"}),
	}
	if reg != nil {
		if err := reg.Register(m.wait); err != nil {
			return nil, fmt.Errorf("register idlease metrics: %w", err)
		}
	}
	return m, nil
}
