package worker

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are resolved per command and result up front, so the hot path
// touches no label maps.
type metrics struct {
	ids        prometheus.Counter
	requests   [][numResults]prometheus.Counter // by cmdKind, then result
	latency    []prometheus.Observer            // by cmdKind
	conns      prometheus.GaugeFunc
	connsTotal prometheus.CounterFunc
	rejected   prometheus.Counter
	// adminRefused counts admin connections closed at once: their remote
	// address held HTTPMaxConnsPerAddr already (AdminListener).
	adminRefused prometheus.Counter
	// adminReserved counts admin connections taken into the probes'
	// reserve: HTTPMaxConns were open (AdminListener).
	adminReserved prometheus.Counter
	// idsRefused counts IDs-over-HTTP connections closed at once: their
	// remote address held HTTPIDsMaxConnsPerAddr already (IDsListener).
	idsRefused prometheus.Counter
	// denied counts connections refused by protected mode (protected.go).
	denied    prometheus.Counter
	protoErrs prometheus.Counter
	// outputLimit counts connections closed by their output limit
	// (outlimit.go).
	outputLimit prometheus.Counter
	// missedWakes counts epoll loops woken by a sibling: parked with
	// sockets ready (loopwake_linux.go).
	missedWakes prometheus.Counter
	timeouts    [timeoutWrite + 1]prometheus.Counter // by timeoutKind
}

// newMetrics makes the server's metrics, per command of cmds, and registers
// them with reg (nil: none), failing rather than panicking if reg already has them.
// The connection metrics read open and accepted, the server's counts that
// Status reports too: one state, so /metrics and /status cannot disagree.
func newMetrics(reg prometheus.Registerer, cmds commandTable, open, accepted *atomic.Int64) (*metrics, error) {
	ids := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "snowflake_worker_ids_issued_total",
		Help: "IDs handed to clients (NEXTID counts 1, NEXTIDS n and NEXTRANGE n count n).",
	})
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "snowflake_worker_requests_total",
		Help: "Requests by command and result (ok, error, nolease, clockback).",
	}, []string{"command", "result"})
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "snowflake_worker_request_duration_seconds",
		Help:    "Time from the read that brought a request to the write of its reply, by command (pipelined requests share their batch's time).",
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10), // 1µs .. 262ms
	}, []string{"command"})
	m := &metrics{
		ids: ids,
		conns: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "snowflake_worker_connections",
			Help: "Client connections open now.",
		}, func() float64 { return float64(open.Load()) }),
		connsTotal: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "snowflake_worker_connections_total",
			Help: "Client connections accepted.",
		}, func() float64 { return float64(accepted.Load()) }),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_connections_rejected_total",
			Help: "Client connections refused because MaxConns were open.",
		}),
		adminRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_admin_connections_refused_total",
			Help: "Admin HTTP connections closed at once because their remote address held HTTPMaxConnsPerAddr already.",
		}),
		adminReserved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_admin_connections_reserved_total",
			Help: "Admin HTTP connections taken into the probes' reserve because HTTPMaxConns were open: each answers /healthz or /readyz only, then closes.",
		}),
		idsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_http_ids_connections_refused_total",
			Help: "IDs-over-HTTP connections closed at once because their remote address held HTTPIDsMaxConnsPerAddr already.",
		}),
		denied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_connections_denied_total",
			Help: "Client connections from a non-loopback address answered -DENIED (403 on IDs over HTTP) and closed by protected mode (no password set, --protected-mode yes).",
		}),
		protoErrs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_protocol_errors_total",
			Help: "Connections closed for a malformed request.",
		}),
		outputLimit: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_output_limit_closes_total",
			Help: "Connections closed because their socket took nothing for 2 s while more than ClientOutputLimit of their replies waited: clients that do not read.",
		}),
		missedWakes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_loop_missed_wakeups_total",
			Help: "Times an epoll loop parked in Go's netpoller with sockets ready for a millisecond or more was woken by another loop: wake-ups the netpoller missed.",
		}),
	}
	timeouts := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "snowflake_worker_connection_timeouts_total",
		Help: "Connections closed by a timeout, by kind (idle, read, write).",
	}, []string{"kind"})
	m.requests = make([][numResults]prometheus.Counter, len(cmds))
	m.latency = make([]prometheus.Observer, len(cmds))
	for k, cmd := range cmds {
		m.latency[k] = latency.WithLabelValues(cmd.name)
		for r := result(0); r < numResults; r++ {
			m.requests[k][r] = requests.WithLabelValues(cmd.name, r.String())
		}
	}
	for k := range m.timeouts {
		m.timeouts[k] = timeouts.WithLabelValues(timeoutKind(k).String())
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{ids, requests, latency, m.conns, m.connsTotal,
			m.rejected, m.adminRefused, m.adminReserved, m.idsRefused, m.denied, m.protoErrs, m.outputLimit, m.missedWakes, timeouts} {
			if err := reg.Register(col); err != nil {
				return nil, fmt.Errorf("register metrics: %w", err)
			}
		}
	}
	return m, nil
}
