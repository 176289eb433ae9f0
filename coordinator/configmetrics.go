package coordinator

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterConfigMetrics exports the timings alerts are written against
// (--renew, --horizon, --max-skew, --session-timeout) as gauges in seconds,
// so that a rule compares a worker's skew or headroom with its own
// settings instead of a number copied into the rule.
func RegisterConfigMetrics(cfg Config, reg prometheus.Registerer) error {
	for _, g := range []struct {
		name, help string
		seconds    float64
	}{
		{"snowflake_coordinator_renew_interval_seconds", "--renew: how often the reservation is extended.", cfg.Renew.Seconds()},
		{"snowflake_coordinator_horizon_seconds", "--horizon: how far ahead of the clock timestamps are reserved.", cfg.Horizon.Seconds()},
		{"snowflake_coordinator_max_skew_seconds", "--max-skew: the clock skew against ZooKeeper past which the worker stops serving.", cfg.MaxSkew.Seconds()},
		{"snowflake_coordinator_session_timeout_seconds", "--session-timeout asked of ZooKeeper.", cfg.SessionTimeout.Seconds()},
	} {
		v := g.seconds
		if err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: g.name, Help: g.help},
			func() float64 { return v })); err != nil {
			return fmt.Errorf("register config metrics: %w", err)
		}
	}
	return nil
}
