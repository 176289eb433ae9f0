package idlease

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/snowflake"
)

// Lease is one slot leased by this program, and the IDs it issues. It is
// safe for concurrent use. Make it with Open (claims and waits until
// ready), or with New and then Start or Actor (for an oklog/run group).
type Lease struct {
	c   *coordinator.Coordinator
	cfg Config
	log hclog.Logger
	m   *metrics
	// reg is what New registered, which Close unregisters (nil: none).
	reg *registered

	startOnce sync.Once
	stop      context.CancelFunc
	// done is closed once the coordinator's Run has returned (or Close
	// came before Start); runErr is then what it returned.
	done   chan struct{}
	runErr error
	// closed is set by Close before it stops the coordinator: a waiting
	// Next returns ErrClosed rather than waiting for a lease that will not
	// come.
	closed atomic.Bool
}

// Open claims a slot and returns once ZooKeeper has confirmed a
// reservation for it, so that Next issues at once. When ctx ends first
// (ZooKeeper unreachable, every slot of the fleet's datacenters held, a
// slot's reservation still to wait out) it gives up, releases whatever it
// holds, and returns a *NotReadyError saying where it stood and why (the
// root missing, the slots reserved until a time, every slot held); a fault
// that retrying cannot fix returns ErrStopped at once. An invalid cfg
// returns at once, before any ZooKeeper call, a *configerr.Error naming
// the field, its value and what is wrong (errors.As; no credentials and
// not Insecure is one: Field "Insecure"). ctx bounds only the wait: the
// lease runs until Close.
//
// log may be nil (no logs); reg may be nil (no metrics), else the
// coordinator's snowflake_coordinator_* and snowflake_idlease_* are
// registered in it until Close, so a lease opened again after Close may
// use the same registry (two leases open at once need a registry each).
func Open(ctx context.Context, cfg Config, log hclog.Logger, reg prometheus.Registerer) (*Lease, error) {
	l, err := New(cfg, log, reg)
	if err != nil {
		return nil, err
	}
	l.Start()
	if err := l.WaitReady(ctx); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// New makes a lease that claims nothing until Start (or Actor's execute).
func New(cfg Config, log hclog.Logger, reg prometheus.Registerer) (*Lease, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("idlease: %w", err)
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = hclog.NewNullLogger()
	}
	var rr *registered
	if reg != nil {
		rr = &registered{reg: reg}
		reg = rr
	}
	c, err := coordinator.New(cfg.Config, log, reg)
	if err == nil {
		var m *metrics
		if m, err = newMetrics(reg); err == nil {
			return &Lease{c: c, cfg: cfg, log: log, m: m, reg: rr, done: make(chan struct{})}, nil
		}
	}
	if rr != nil {
		rr.unregisterAll() // what was registered before the failure
	}
	return nil, fmt.Errorf("idlease: %w", err)
}

// Start runs the lease on goroutines of its own: it claims a slot, keeps
// its reservation renewed, and claims again after a loss, until Close. A
// second Start, or one after Close, does nothing.
func (l *Lease) Start() {
	l.startOnce.Do(func() {
		ctx, cancel := context.WithCancel(context.Background())
		l.stop = cancel
		go func() {
			err := l.c.Run(ctx)
			if err != nil {
				l.log.Error("embedded lease stopped", "error", err)
				err = fmt.Errorf("%w: %w", ErrStopped, err)
			}
			l.runErr = err
			close(l.done)
		}()
	})
}

// Close releases the slot as a worker's SIGTERM does: the generator is
// sealed (a Next waiting returns ErrClosed; none issues once Close has
// returned), the reservation is lowered to the last timestamp issued and
// the lease node deleted, so a successor claims the slot at once. It
// returns once released, within ReleaseTimeout plus a second when
// ZooKeeper is unreachable (the stored reservation then stands, and a
// successor waits it out). It returns the ErrStopped error when the lease
// had stopped on its own; a later Close returns the same.
func (l *Lease) Close() error {
	l.closed.Store(true)
	l.startOnce.Do(func() { close(l.done) }) // never started: nothing to release
	if l.stop != nil {
		l.stop()
	}
	<-l.done
	if l.reg != nil {
		l.reg.unregisterAll()
	}
	return l.runErr
}

// Done is closed once the lease has stopped: after Close, or on a fault
// retrying cannot fix (Err says which).
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is nil while the lease runs and after Close; the ErrStopped error
// once it stopped for a fault.
func (l *Lease) Err() error {
	select {
	case <-l.done:
		return l.runErr
	default:
		return nil
	}
}

// Actor is the lease as an oklog/run actor: execute starts it and returns
// when it stops (nil after interrupt, the ErrStopped error on a fault);
// interrupt closes it. Add it with g.Add(lease.Actor()).
func (l *Lease) Actor() (execute func() error, interrupt func(error)) {
	return func() error {
			l.Start()
			<-l.done
			return l.runErr
		}, func(error) {
			_ = l.Close()
		}
}

// Slot is the slot held now, and whether one is.
func (l *Lease) Slot() (snowflake.Slot, bool) {
	if g := l.c.Generator(); g != nil && !g.Sealed() {
		return g.Slot(), true
	}
	return snowflake.Slot{}, false
}

// Status is the coordinator's snapshot: state, slot, lease node, ceiling,
// counts of IDs, claims and losses.
func (l *Lease) Status() coordinator.Status { return l.c.Status() }

// Coordinator is the lease's coordinator, for what this package does not
// wrap (its slot map read on the lease's session, say). Take IDs through
// Next and NextN, not its generator.
func (l *Lease) Coordinator() *coordinator.Coordinator { return l.c }
