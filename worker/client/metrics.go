package client

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
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
	backoffs                                 prometheus.Counter
	failures                                 prometheus.Counter
	endpoints                                prometheus.GaugeFunc
	prefetchDropped                          prometheus.Counter
	slotMismatches                           prometheus.Counter
	orderErrors                              prometheus.Counter
}

// newMetrics registers the client's metrics in reg (if not nil), each with
// the constant labels; distinct labels let several Clients share reg.
// buffered reads the prefetch buffer's fill, endpoints the worker set's
// size (the set itself, not a second count of it).
func newMetrics(reg prometheus.Registerer, constLabels map[string]string, buffered, endpoints func() float64) (*metrics, error) {
	labels := prometheus.Labels(constLabels)
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "snowflake_client_requests_total",
		Help:        "Requests sent to workers, by result: ok, nolease, clockback, error (an error reply not retried), broken (dial, I/O, timeout or bad reply).",
		ConstLabels: labels,
	}, []string{"result"})
	m := &metrics{
		ok:        requests.WithLabelValues(resultOK),
		noLease:   requests.WithLabelValues(resultNoLease),
		clockBack: requests.WithLabelValues(resultClockBack),
		errReply:  requests.WithLabelValues(resultError),
		broken:    requests.WithLabelValues(resultBroken),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "snowflake_client_retries_total",
			Help:        "Requests sent again (to another worker, or the same after its backoff) because the one before failed.",
			ConstLabels: labels,
		}),
		backoffs: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "snowflake_client_backoffs_total",
			Help:        "Times a worker was left out after a failure; requests that were under way when it failed count once, with it.",
			ConstLabels: labels,
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "snowflake_client_failures_total",
			Help:        "Calls (Next, NextN) that returned an error to the caller.",
			ConstLabels: labels,
		}),
		endpoints: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "snowflake_client_endpoints",
			Help:        "Workers the client knows (discovered or static), healthy or not.",
			ConstLabels: labels,
		}, endpoints),
		slotMismatches: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "snowflake_client_slot_mismatches_total",
			Help:        "Replies dropped because an ID was not of the slot the worker's lease node names (a stale listing, or a forged lease node); the worker is backed off.",
			ConstLabels: labels,
		}),
		orderErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "snowflake_client_order_errors_total",
			Help:        "Replies dropped because an ID was not above one the worker had returned before the request (it repeats IDs); the worker is backed off.",
			ConstLabels: labels,
		}),
		prefetchDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "snowflake_client_prefetch_dropped_total",
			Help:        "Prefetched IDs dropped unused because they grew older than MaxStaleness (Config.Prefetch).",
			ConstLabels: labels,
		}),
	}
	prefetched := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "snowflake_client_prefetch_buffered",
		Help:        "Prefetched IDs waiting in the buffer behind Next (0 with Config.Prefetch off).",
		ConstLabels: labels,
	}, buffered)
	if reg != nil {
		for _, col := range []prometheus.Collector{requests, m.retries, m.backoffs, m.failures, m.endpoints, m.prefetchDropped, m.slotMismatches, m.orderErrors, prefetched} {
			if err := reg.Register(col); err != nil {
				return nil, fmt.Errorf("client: register metrics: %w", err)
			}
		}
	}
	return m, nil
}

// checkConstLabels names the first constant label, in name order, that
// Prometheus would refuse or that would clash with the metrics' own label.
func checkConstLabels(labels map[string]string) error {
	for _, name := range slices.Sorted(maps.Keys(labels)) {
		switch {
		case !validLabelName(name):
			return &configerr.Error{Field: "ConstLabels", Value: name, Reason: "is not a label name: it must match [a-zA-Z_][a-zA-Z0-9_]* and not begin with __"}
		case name == "result":
			return &configerr.Error{Field: "ConstLabels", Value: name, Reason: "is the label of snowflake_client_requests_total; choose another"}
		case labels[name] == "":
			return &configerr.Error{Field: "ConstLabels", Value: name, Reason: "has an empty value, which Prometheus treats as no label"}
		}
	}
	return nil
}

// validLabelName: [a-zA-Z_][a-zA-Z0-9_]*, not __-prefixed (reserved), which
// every Prometheus version and scraper accepts.
func validLabelName(s string) bool {
	if s == "" || strings.HasPrefix(s, "__") {
		return false
	}
	for i, ch := range s {
		letter := ch == '_' || ('a' <= ch && ch <= 'z') || ('A' <= ch && ch <= 'Z')
		if !letter && (i == 0 || ch < '0' || ch > '9') {
			return false
		}
	}
	return true
}
