package client

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of one request to one worker, the result label of
// snowflake_client_requests_total.
const (
	resultOK        = "ok"
	resultNoLease   = "nolease"
	resultClockBack = "clockback"
	resultError     = "error"  // -ERR or another error reply: not retried
	resultBroken    = "broken" // dial, I/O, timeout or protocol error
)

type metrics struct {
	ok, noLease, clockBack, errReply, broken prometheus.Counter
	retries                                  prometheus.Counter
	failures                                 prometheus.Counter
	endpoints                                prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "snowflake_client_requests_total",
		Help: "Requests sent to workers, by result: ok, nolease, clockback, error (an error reply not retried), broken (dial, I/O, timeout or bad reply).",
	}, []string{"result"})
	m := &metrics{
		ok:        requests.WithLabelValues(resultOK),
		noLease:   requests.WithLabelValues(resultNoLease),
		clockBack: requests.WithLabelValues(resultClockBack),
		errReply:  requests.WithLabelValues(resultError),
		broken:    requests.WithLabelValues(resultBroken),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_client_retries_total",
			Help: "Requests sent again (to another worker, or the same after its backoff) because the one before failed.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_client_failures_total",
			Help: "Calls (Next, NextN) that returned an error to the caller.",
		}),
		endpoints: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snowflake_client_endpoints",
			Help: "Workers the client knows (discovered or static), healthy or not.",
		}),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{requests, m.retries, m.failures, m.endpoints} {
			if err := reg.Register(col); err != nil {
				return nil, fmt.Errorf("client: register metrics: %w", err)
			}
		}
	}
	return m, nil
}
