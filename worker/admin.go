package worker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/snowfleet/snowfleet/coordinator"
)

// A scrape gathers every metric: a few at once are plenty, more are
// answered 503, and one that takes longer than metricsTimeout too.
const (
	metricsInFlight = 4
	metricsTimeout  = 10 * time.Second
)

// Handler serves the admin endpoints: /metrics from g, /healthz (the
// process is up), /readyz (200 only while the lease is ready and the server
// is not draining: what a load balancer should route on), /status (JSON).
func (s *Server) Handler(g prometheus.Gatherer) http.Handler {
	open := http.NewServeMux() // the probes
	mux := http.NewServeMux()  // the rest, behind the bearer token when one is set
	open.Handle("/", s.bearer(mux))
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		MaxRequestsInFlight: metricsInFlight, Timeout: metricsTimeout,
	}))
	open.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	open.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		body, ready := s.readyLine(s.lease.Readiness())
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, body)
	})
	s.handleSlots(mux) // slots.go: /slots and /slots.json, the slot map drawn and as JSON
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Status())
	})
	return open
}

// readyLine is /readyz's one line, given r, the lease's verdict: the reason
// as its first word (ready, draining, shutting_down, or the lease's:
// no_lease, ceiling_passed, clock_back, skew), so that a probe's log or a
// runbook can match on it, then the figures it was reached from. Its bool
// is the one decision /readyz answers and Status reports as ready.
func (s *Server) readyLine(r coordinator.Readiness) (string, bool) {
	if s.draining.Load() {
		return "draining (shutting down: in-flight requests finish, no new ones)", false
	}
	if s.leaving.Load() {
		return "shutting_down (shutting down: still serving IDs until the shutdown delay ends)", false
	}
	return r.String(), r.Ready()
}
