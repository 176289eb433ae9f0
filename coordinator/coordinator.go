package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

var (
	// ErrAlreadyRunning: Run was called twice on one Coordinator.
	ErrAlreadyRunning = errors.New("coordinator is already running")
	// ErrCallTimeout: a ZooKeeper call did not answer in time, or was
	// abandoned on cancel; its outcome is unknown (a write may have landed).
	ErrCallTimeout = errors.New("zookeeper call timed out")
)

// Status is a snapshot of the coordinator for /status and INFO.
type Status struct {
	State        string    `json:"state"`
	Slot         string    `json:"slot,omitempty"`
	LeaseNode    string    `json:"lease_node,omitempty"`
	FloorMs      int64     `json:"floor_ms,omitempty"`
	CeilingMs    int64     `json:"ceiling_ms,omitempty"`
	LastIssuedMs int64     `json:"last_issued_ms,omitempty"`
	Issued       uint64    `json:"issued"`
	SkewMs       int64     `json:"skew_ms"`
	ZKMtimeMs    int64     `json:"zk_mtime_ms,omitempty"`
	SessionID    int64     `json:"session_id"`
	Ready        bool      `json:"ready"`
	Since        time.Time `json:"since"`
	Claims       int64     `json:"claims"`
	Creates      int64     `json:"creates"`
	Losses       int64     `json:"losses"`
	// LeadMs is how far the last issued timestamp is ahead of the clock (a
	// logical clock riding out a step back); LogicalIssued counts the IDs
	// issued so, over every lease of this process.
	LeadMs        int64  `json:"lead_ms"`
	LogicalIssued uint64 `json:"logical_issued"`
}

// Coordinator holds one slot lease for a worker. Create it with New, run it
// with Run (an oklog/run actor), take IDs from Generator.
type Coordinator struct {
	cfg Config
	log hclog.Logger
	m   *metrics
	// nodeACL is what our lease and standby nodes are made with
	// (tree.WorkerNodeACL); dirACL is standby/'s, when the first standby
	// of an insecure root makes it.
	nodeACL, dirACL []zk.ACL
	clock           snowflake.Clock
	// space is every slot this coordinator chooses among, before the
	// fleet's datacenters and cfg.Datacenter narrow it: all 1,024 (New).
	// Tests of this package narrow it so that a successor must take a
	// given slot.
	space []snowflake.Slot

	running atomic.Bool
	gen     atomic.Pointer[snowflake.Generator]
	skewMs  atomic.Int64
	mtimeMs atomic.Int64 // ZooKeeper leader's mtime of our last confirmed write
	// waitReason and waitReserved are what a coordinator without a lease
	// waits for (setWaiting): a Reason, and a reservation's Unix ms.
	waitReason   atomic.Uint32
	waitReserved atomic.Int64
	// refused: the ensemble refuses our session's reconnect (refusal.go);
	// the lease loop goes to sessionRefused and Run opens a new session.
	refused atomic.Bool
	claims  atomic.Int64
	creates atomic.Int64
	lists   atomic.Int64 // listings of leases/ (the standby herd's cost)
	// logicalDone counts the IDs issued on a logical clock by generators
	// already dropped (see logicalIssued).
	logicalDone atomic.Uint64
	// maxForward is the largest forward clock step seen, in ns.
	maxForward atomic.Int64
	// owned is the DCSet the root owns, once checkScope verified it (0
	// before): the fleet figures export its datacenters' slots.
	owned atomic.Uint32
	// zkState is the session state last reported by go-zookeeper.
	zkState atomic.Int32
	// stopped is when Run's ctx ended (unix ns), 0 before: see stopAt.
	stopped atomic.Int64
	// wake is poked (never blocking) by the session event callback.
	wake chan struct{}
	conn atomic.Pointer[zk.Conn]
	// maps is the session ReadSlotMap reads on, not conn (mapsession.go).
	maps mapSession

	mu    sync.Mutex
	state string
	since time.Time
	lease *wonLease // current lease, nil when none
}

// New returns a Coordinator for cfg. reg may be nil (no metrics registered).
func New(cfg Config, log hclog.Logger, reg prometheus.Registerer) (*Coordinator, error) {
	if cfg.Clock == nil {
		cfg.Clock = snowflake.SystemClock{}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new coordinator: %w", err)
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	c := &Coordinator{
		cfg: cfg, log: log, nodeACL: tree.WorkerNodeACL(cfg.Auth != ""), dirACL: tree.ACL(cfg.Auth), clock: cfg.Clock, space: allSlots(),
		wake: make(chan struct{}, 1), state: StateStopped, since: time.Now(),
	}
	if cfg.Auth == "" {
		log.Warn("running without ZooKeeper credentials (insecure): the fleet's tree is world-writable, and anyone reaching ZooKeeper can cause duplicate IDs, steal the slot map or stop the fleet",
			"fix", "give the worker's credentials (--zk-auth-file) and run snowflakectl secure")
	}
	if sh := cfg.standbyHorizon(); sh > cfg.SessionTimeout {
		// Horizon above the session timeout is the default (it rides out
		// outages); only a waiting standby's takeover needs the short one.
		log.Warn("standby horizon is longer than the session timeout: a waiting standby waits it out after a crash",
			"standby_horizon", sh, "session_timeout", cfg.SessionTimeout)
	}
	m, err := newMetrics(reg, c)
	if err != nil {
		return nil, fmt.Errorf("new coordinator: %w", err)
	}
	c.m = m
	c.m.setState(StateStopped)
	return c, nil
}

// Generator is the current lease's generator, nil while no lease is held. A
// generator whose lease was lost or released is sealed: it fails with
// snowflake.ErrSealed.
func (c *Coordinator) Generator() *snowflake.Generator { return c.gen.Load() }

// Status is a snapshot for operators.
func (c *Coordinator) Status() Status {
	c.mu.Lock()
	st := Status{State: c.state, Since: c.since}
	l := c.lease
	c.mu.Unlock()
	if conn := c.conn.Load(); conn != nil {
		st.SessionID = conn.SessionID()
	}
	st.SkewMs = c.skewMs.Load()
	st.ZKMtimeMs = c.mtimeMs.Load()
	st.Claims = c.claims.Load()
	st.Creates = c.creates.Load()
	st.Losses = c.m.lossesTotal()
	if l != nil {
		st.Slot, st.LeaseNode, st.FloorMs = l.slot.String(), l.name, l.floor
	}
	if g := c.gen.Load(); g != nil {
		st.CeilingMs, st.LastIssuedMs, st.Issued = g.Ceiling(), g.LastMs(), g.Issued()
		st.LeadMs = g.LeadMs()
	}
	st.LogicalIssued = c.logicalIssued()
	st.Ready = c.Ready()
	return st
}

func (c *Coordinator) headroomSeconds() float64 {
	g := c.gen.Load()
	if g == nil || g.Sealed() {
		return 0
	}
	return float64(g.Ceiling()-c.nowMs()) / 1000
}

func (c *Coordinator) setState(s string) {
	c.mu.Lock()
	if c.state != s {
		c.state, c.since = s, time.Now()
	}
	c.mu.Unlock()
	c.m.setState(s)
}

func (c *Coordinator) getState() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Run claims a slot, serves it and keeps renewing; a lost lease is claimed
// again. When ctx ends it seals the generator, releases the lease (bounded
// by ReleaseTimeout) and returns nil. It returns an error only for what
// retrying cannot fix: a root made for another layout, failed auth.
func (c *Coordinator) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	if err := c.checkIDSpace(); err != nil {
		return fmt.Errorf("coordinator: %w", err)
	}
	defer c.setState(StateStopped)
	defer c.maps.close()
	c.setState(StateConnecting)
	var prev *rollbackWatch
	for {
		back, err := c.runSession(ctx, prev)
		if !errors.Is(err, errRefusedSession) {
			return err
		}
		prev = back
	}
}

// runSession opens a ZooKeeper session and runs the lease loop on it
// (leaseloop.go) until ctx ends (nil) or a fault retrying cannot fix (an
// error). When the ensemble refuses the session's reconnect (went back in
// time) it returns errRefusedSession and the session's rollback history,
// which the next session starts from, claiming only once recover (or
// init) has run.
func (c *Coordinator) runSession(ctx context.Context, prev *rollbackWatch) (*rollbackWatch, error) {
	zs, err := c.dialSession()
	if err != nil {
		return nil, fmt.Errorf("coordinator: %w", err)
	}
	conn := zs.conn
	c.refused.Store(false)
	// Connected, or about to be: not "disconnected" from an earlier
	// session while this one waits for the root or for recover.
	c.setState(StateConnecting)
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go c.watchRefusal(wctx, conn)
	// The whole shutdown, release and close, ends within ReleaseTimeout +
	// closeTimeout of the cancel.
	defer context.AfterFunc(ctx, func() { c.stopAt() })()
	defer func() {
		by := time.Now().Add(closeTimeout)
		if ctx.Err() != nil {
			by = c.stopAt().Add(c.cfg.ReleaseTimeout + closeTimeout)
		}
		closeBy(conn, by)
	}()
	c.conn.Store(conn)
	s := newLeaseLoop(c, zs, prev)
	if c.cfg.Auth != "" {
		if err := zs.auth(ctx, c.cfg.Auth); err != nil {
			if ctx.Err() != nil {
				return &s.rollback, nil
			}
			return &s.rollback, fmt.Errorf("coordinator: %w", err)
		}
	}
	return &s.rollback, s.run(ctx)
}

func (c *Coordinator) nowMs() int64 { return c.clock.UnixNano() / int64(time.Millisecond) }

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// Datacenter is the datacenter the coordinator is pinned to, -1 for any.
func (c *Coordinator) Datacenter() int { return c.cfg.Datacenter }

// Root is the fleet's root znode.
func (c *Coordinator) Root() string { return c.cfg.Root }
