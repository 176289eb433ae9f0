package coordinator

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// States a Coordinator reports in Status and the lease_state metric.
const (
	StateConnecting   = "connecting"
	StateClaiming     = "claiming"
	StateStandby      = "standby"
	StateServing      = "serving"
	StateDisconnected = "disconnected"
	StateReleasing    = "releasing"
	StateStopped      = "stopped"
)

var allStates = []string{StateConnecting, StateClaiming, StateStandby, StateServing,
	StateDisconnected, StateReleasing, StateStopped}

type metrics struct {
	state       *prometheus.GaugeVec
	claims      prometheus.CounterFunc
	creates     prometheus.CounterFunc
	lists       prometheus.CounterFunc
	losses      *prometheus.CounterVec
	resumes     prometheus.Counter
	renew       prometheus.Histogram
	renewErrors *prometheus.CounterVec
	undecodable prometheus.Counter
	rollbacks   prometheus.Counter
	awaiting    prometheus.GaugeFunc
	claimTime   prometheus.Histogram
	skew        prometheus.GaugeFunc
	horizon     prometheus.Gauge
	missing     *prometheus.CounterVec
	headroom    prometheus.GaugeFunc
	ready       prometheus.GaugeFunc
	lead        prometheus.GaugeFunc
	logical     prometheus.CounterFunc
	steps       *prometheus.CounterVec
	forward     prometheus.GaugeFunc
	insecure    prometheus.GaugeFunc
	idSpace     prometheus.GaugeFunc
	// forgedLeases counts lease nodes numbered past leases/' counter.
	forgedLeases prometheus.Counter
}

// newMetrics makes the coordinator's metrics and registers them with reg
// (nil: none), failing rather than panicking if reg already has them.
func newMetrics(reg prometheus.Registerer, c *Coordinator) (*metrics, error) {
	m := &metrics{
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "snowflake_coordinator_lease_state",
			Help: "1 for the lease state the coordinator is in, 0 for the others.",
		}, []string{"state"}),
		// claims, creates, lists and skew read the atomics Status reads:
		// one count, so /status, INFO and /metrics cannot disagree.
		claims: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "snowflake_coordinator_claims_total",
			Help: "Slots claimed: lease node won and reservation confirmed.",
		}, func() float64 { return float64(c.claims.Load()) }),
		creates: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "snowflake_coordinator_lease_creates_total",
			Help: "Lease nodes created (a claim that loses a race creates another).",
		}, func() float64 { return float64(c.creates.Load()) }),
		lists: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "snowflake_coordinator_lease_lists_total",
			Help: "Listings of leases/ (about 1,024 names each with a full fleet): what claiming and standing by cost ZooKeeper.",
		}, func() float64 { return float64(c.lists.Load()) }),
		losses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowflake_coordinator_lease_losses_total",
			Help: "Leases lost, by reason (expired, node_gone, taken, refused, undecodable, slot_missing, rolled_back).",
		}, []string{"reason"}),
		resumes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_coordinator_lease_resumes_total",
			Help: "Lost leases (expired, node gone) whose slot was claimed again from the last ID issued, nobody having written it since: no wait for the lost lease's own reservation.",
		}),
		renew: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "snowflake_coordinator_renew_duration_seconds",
			Help:    "Latency of the fenced reservation write (Multi).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		renewErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowflake_coordinator_renew_errors_total",
			Help: "Reservation writes that failed, by kind (unknown: no answer; bad_version; lost; failed: refused by the slot's ACL; slot_missing; server: another error from the server, such as a quota, the lease kept).",
		}, []string{"kind"}),
		rollbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_coordinator_rollbacks_detected_total",
			Help: "Times the ensemble was seen gone back in time (a lease node numbered below one seen before: a restore from a backup); the worker then claims nothing until snowflakectl recover runs.",
		}),
		awaiting: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "snowflake_coordinator_awaiting_recover",
			Help: "1 while the worker waits for snowflakectl recover after seeing the ensemble go back in time.",
		}, func() float64 {
			if c.awaitingRecover() {
				return 1
			}
			return 0
		}),
		undecodable: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_coordinator_slot_undecodable_total",
			Help: "Slot nodes read that hold no slot record (a hand edit?): each time, the slot is avoided and its lease let go. Alert on any increase.",
		}),
		claimTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "snowflake_coordinator_claim_duration_seconds",
			Help:    "Time from starting to claim until serving, including waits for stored reservations.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		missing: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "snowflake_coordinator_missing_znodes_total",
			Help: "Nodes of the layout found missing (root, leases, slots, slot), counted at each look: damage for an operator to repair.",
		}, []string{"znode"}),
		horizon: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "snowflake_coordinator_reservation_horizon_seconds",
			Help: "The horizon of the holder's last renew: --horizon, or --standby-horizon while a standby waits for its range.",
		}),
		skew: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "snowflake_coordinator_clock_skew_seconds",
			Help: "ZooKeeper leader mtime minus the local clock, outside the write's send/receive window (0 inside).",
		}, func() float64 { return float64(c.skewMs.Load()) / 1000 }),
	}
	m.headroom = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snowflake_coordinator_ceiling_headroom_seconds",
		Help: "Confirmed ceiling minus the local clock: how long the worker can serve without ZooKeeper.",
	}, c.headroomSeconds)
	m.ready = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snowflake_coordinator_ready",
		Help: "1 while the lease is held, the ceiling is ahead and the skew is within bound.",
	}, func() float64 {
		if c.Ready() {
			return 1
		}
		return 0
	})
	m.lead = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snowflake_coordinator_clock_lead_seconds",
		Help: "How far the last issued timestamp is ahead of the local clock: above 0 while a logical clock rides out a clock step back (--on-clock-back logical).",
	}, c.leadSeconds)
	m.logical = prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "snowflake_coordinator_logical_ids_total",
		Help: "IDs issued on a logical clock, the local clock being behind the last issued timestamp.",
	}, func() float64 { return float64(c.logicalIssued()) })
	m.steps = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "snowflake_coordinator_clock_steps_total",
		Help: "Steps of the wall clock of 10 ms or more against the monotonic clock, seen while holding a lease, by direction (forward, back).",
	}, []string{"direction"})
	m.forward = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snowflake_coordinator_clock_forward_step_max_seconds",
		Help: "The largest forward step of the wall clock seen: the longest gap it left in a slot's timeline (harmless to uniqueness).",
	}, func() float64 { return time.Duration(c.maxForward.Load()).Seconds() })
	m.insecure = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snowflake_coordinator_zk_insecure",
		Help: "1 when the coordinator runs without ZooKeeper credentials (--zk-insecure): its tree is world-writable, and any ZooKeeper client can cause duplicate IDs.",
	}, func() float64 {
		if c.cfg.Auth == "" {
			return 1
		}
		return 0
	})
	m.forgedLeases = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "snowflake_coordinator_forged_lease_nodes_total",
		Help: "Lease nodes seen numbered at or past leases/' child counter: made with a chosen name by a plain create, not by a worker's sequential one; ignored by the restore detector.",
	})
	m.idSpace = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "snowflake_coordinator_id_space_remaining_seconds",
		Help: "Seconds from this worker's clock to the last millisecond an ID can carry (2080-07-10T17:30:30.208Z, 41 bits of ms since 1288834974657); negative past it, when no claim is made.",
	}, func() float64 { return c.idSpaceLeft().Seconds() })
	m.steps.WithLabelValues("forward")
	m.steps.WithLabelValues("back")
	for _, s := range allStates {
		m.state.WithLabelValues(s)
	}
	for _, r := range []string{"expired", "node_gone", "taken", "refused", "undecodable", "slot_missing", "rolled_back"} {
		m.losses.WithLabelValues(r)
	}
	for _, z := range []string{"root", "leases", "slots", "slot"} {
		m.missing.WithLabelValues(z)
	}
	// Exported from the start, so rate() and dashboards see 0, not nothing.
	for _, k := range []string{"unknown", "bad_version", "lost", "failed", "slot_missing", "server"} {
		m.renewErrors.WithLabelValues(k)
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{m.state, m.claims, m.creates, m.lists, m.losses, m.resumes, m.renew,
			m.renewErrors, m.undecodable, m.rollbacks, m.awaiting, m.claimTime, m.skew, m.horizon, m.missing, m.headroom, m.ready, m.lead, m.logical, m.steps, m.forward, m.insecure, m.idSpace, m.forgedLeases, newFleetFigures(c)} {
			if err := reg.Register(col); err != nil {
				return nil, fmt.Errorf("register metrics: %w", err)
			}
		}
	}
	return m, nil
}

// lossesTotal is Status's losses: the sum of the losses counter over its
// reasons. The counter is the one count kept (no atomic beside it), its
// reason label being what a per-reason atomic would have to mirror; it is
// read only for /status and INFO.
func (m *metrics) lossesTotal() int64 {
	ch := make(chan prometheus.Metric)
	go func() {
		m.losses.Collect(ch)
		close(ch)
	}()
	var sum float64
	for mt := range ch {
		var d dto.Metric
		if mt.Write(&d) == nil {
			sum += d.GetCounter().GetValue()
		}
	}
	return int64(sum)
}

func (m *metrics) setState(s string) {
	for _, x := range allStates {
		v := 0.0
		if x == s {
			v = 1
		}
		m.state.WithLabelValues(x).Set(v)
	}
}
