package coordinator

import (
	"fmt"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// Config configures a Coordinator.
type Config struct {
	// ZKConfig is the ensemble (Servers), the fleet's root (Root), the
	// workers' digest identity (Auth), TLS to the secureClientPort and the
	// session timeout, checked by its own Validate. Here Auth "" needs
	// Insecure; with it, the worker's own nodes (lease, standby) are
	// writable by that identity only and readable by the world, and the
	// tree must grant it what a worker needs and the world nothing but read
	// (FleetACL): checked at every session's start (ErrUntrustedTree). The
	// session timeout is how long a crashed or cut-off holder keeps its
	// slot.
	zklayout.ZKConfig
	// Insecure lets the coordinator run without Auth. Its nodes are then
	// world-writable, so any ZooKeeper client can cause duplicate IDs, and
	// it trusts any tree. Without Auth and without Insecure, Validate
	// refuses the config (secure by default); with it, New logs a warning
	// and the snowflake_coordinator_zk_insecure gauge is 1. With Auth it
	// changes nothing.
	Insecure bool
	// Datacenter pins the worker to the 32 slots of one datacenter (0..31);
	// -1 means any slot of the datacenters the fleet's root owns. A pinned
	// datacenter the root does not own is refused (ErrOutsideFleet).
	Datacenter int
	// ScanLimit and ScanSkip bounded and steered the walk of the ensemble
	// that looked for other fleets. Deprecated: fleets are registered, not
	// searched for (tree.ReadRegistry), so neither is read; they are still
	// validated, so that a config naming them starts, and a start logs
	// that they are ignored.
	ScanLimit int
	ScanSkip  []string
	// Renew is how often the holder extends its reservation.
	Renew time.Duration
	// Horizon is how far past its clock a holder reserves timestamps: the
	// most it can serve without reaching ZooKeeper, and the most a successor
	// may have to wait after a crash.
	Horizon time.Duration
	// StandbyHorizon replaces Horizon while a standby waits for a slot of
	// the holder's range (a node in standby/ that may take its slot): the
	// holder lowers its reservation to it at the next renew, so that a
	// crash passes its slot on within about SessionTimeout +
	// StandbyHorizon. It must exceed Renew; the value in force is
	// min(StandbyHorizon, Horizon) (as with MaxClockLead, a Horizon set
	// below the default needs no StandbyHorizon of its own); 0 means
	// Horizon: never shorten.
	StandbyHorizon time.Duration
	// MaxReservationWait is how long a claimer waits for its clock to pass a
	// slot's stored reservation; a slot needing longer (a clock behind) is
	// released and another one tried.
	MaxReservationWait time.Duration
	// MaxSkew is how far the ZooKeeper leader's mtime may fall outside the
	// local send/receive window of a write before the lease is not ready.
	MaxSkew time.Duration
	// ReleaseTimeout bounds the release on shutdown when ZooKeeper is slow or
	// unreachable.
	ReleaseTimeout time.Duration
	// MaxRollbackWait is how far the clock may step behind the last issued
	// timestamp for the generator to wait rather than fail fast (Refuse).
	MaxRollbackWait time.Duration
	// OnClockBack is what the generator does when the clock steps back:
	// snowflake.Logical (the default) goes on from the last issued
	// timestamp, within MaxClockLead and the confirmed ceiling, and stays
	// ready; snowflake.Refuse stops issuing (-CLOCKBACK, not ready) until
	// the clock catches up.
	OnClockBack snowflake.ClockBackPolicy
	// MaxClockLead bounds the logical clock: how far ahead of the clock it
	// may issue. The ceiling is never more than Horizon ahead, so the bound
	// in force is min(MaxClockLead, Horizon). With OnClockBack logical it
	// may not exceed the standby horizon in force (see Validate).
	MaxClockLead time.Duration
	// SequenceStart is the sequence each millisecond's first ID takes:
	// snowflake.StartZero (the default) or snowflake.StartSpread, which
	// spreads the starts so that id % N shards evenly at low rates.
	SequenceStart snowflake.SequenceStart
	// Advertise is the worker's ID service address (host:port), published in
	// the lease node for client discovery.
	Advertise string
	// HTTPAdvertise is the worker's admin HTTP address, published likewise.
	HTTPAdvertise string
	// Version is the worker's build, published in the lease node.
	Version string
	// Kind says what holds the lease, published in the lease node:
	// zklayout.KindWorker ("" means it) serves IDs over the network at
	// Advertise; zklayout.KindEmbedded is a program that issues IDs
	// in-process (package coordinator/idlease), which clients and balancers
	// never route to.
	Kind string
	// Program names the program holding the lease, published in the lease
	// node for operators ("" = not given).
	Program string
	// Clock is the time source of the generator and of the reservations;
	// nil means snowflake.SystemClock.
	Clock snowflake.Clock
}

// DefaultConfig: session timeout 6s, renew 1s, horizon 40s (a ZooKeeper
// outage of 30 s, with its restart, costs no ID), standby horizon 5s, a
// logical clock leading by at most 5s, any datacenter, root /snowflake.
func DefaultConfig() Config {
	return Config{
		ZKConfig:           zklayout.DefaultZKConfig(),
		Datacenter:         -1,
		Renew:              time.Second,
		Horizon:            DefaultHorizon,
		StandbyHorizon:     DefaultStandbyHorizon,
		MaxReservationWait: 15 * time.Second,
		MaxSkew:            time.Second,
		ReleaseTimeout:     2 * time.Second,
		MaxRollbackWait:    5 * time.Millisecond,
		OnClockBack:        snowflake.Logical,
		MaxClockLead:       DefaultMaxClockLead,
		Kind:               zklayout.KindWorker,
		Clock:              snowflake.SystemClock{},
	}
}

// Validate names the first field that is out of range, as a
// *configerr.Error.
func (c Config) Validate() error {
	bad := func(field string, value any, reason string) error {
		return &configerr.Error{Field: field, Value: value, Reason: reason}
	}
	if err := c.ZKConfig.Validate(); err != nil {
		return err
	}
	if c.Auth == "" && !c.Insecure {
		// No value shown: "Insecure false is false" said nothing.
		return bad("Insecure", nil, "Auth is empty and Insecure is not set: give the workers' ZooKeeper identity in Auth (user:password; zkconn.ReadAuthFile reads the file given to snowflakectl init as --zk-worker-auth-file), or set Insecure for a fleet made with --zk-insecure (anyone reaching ZooKeeper can then cause duplicate IDs)")
	}
	if c.Datacenter < -1 || c.Datacenter > snowflake.MaxDatacenter {
		return bad("Datacenter", c.Datacenter, fmt.Sprintf("is out of range -1..%d (-1 = any)", snowflake.MaxDatacenter))
	}
	if c.ScanLimit < 0 || c.ScanLimit > 10_000_000 {
		return bad("ScanLimit", c.ScanLimit, "is out of range 0..10000000 (0: no count, bounded by time)")
	}
	for _, p := range c.ScanSkip {
		if !tree.ValidSkipPath(p) {
			return bad("ScanSkip", p, "is not an absolute, clean znode path such as /apps/private (not /, no trailing / nor . or ..)")
		}
	}
	if c.Renew < 10*time.Millisecond {
		return bad("Renew", c.Renew, "is below 10ms")
	}
	if c.Horizon <= c.Renew {
		return bad("Horizon", c.Horizon, fmt.Sprintf("must exceed Renew %v, or the ceiling runs out between renewals", c.Renew))
	}
	if c.Horizon > 24*time.Hour {
		return bad("Horizon", c.Horizon, "is above 24h")
	}
	if c.StandbyHorizon < 0 || c.StandbyHorizon > 0 && c.standbyHorizon() <= c.Renew {
		return bad("StandbyHorizon", c.StandbyHorizon, fmt.Sprintf("must exceed Renew %v, or the ceiling runs out between renewals (0 = never shorten)", c.Renew))
	}
	if c.MaxReservationWait < 0 {
		return bad("MaxReservationWait", c.MaxReservationWait, "is negative")
	}
	if c.MaxSkew <= 0 {
		return bad("MaxSkew", c.MaxSkew, "must be positive")
	}
	if c.ReleaseTimeout <= 0 {
		return bad("ReleaseTimeout", c.ReleaseTimeout, "must be positive")
	}
	if err := c.validateGenerator(); err != nil {
		return err
	}
	if c.OnClockBack == snowflake.Logical && c.clockLead() > c.standbyHorizon() {
		// A standby waiting makes the holder lower its ceiling to now +
		// the standby horizon, but never below what it issued: a logical
		// clock further ahead than that leaves the ceiling at its last
		// timestamp, and the worker issues nothing until the clock has
		// caught up to within the standby horizon. Refusing the pair is
		// simpler than either stalling or shortening less than asked
		// (which would make the standby wait the lead out).
		return bad("MaxClockLead", c.MaxClockLead, fmt.Sprintf(
			"is above StandbyHorizon %v (in force: a lead of %v against %v): a worker leading further would stall while a standby waits; at most %v",
			c.StandbyHorizon, c.clockLead(), c.standbyHorizon(), c.standbyHorizon()))
	}
	return c.validateKind()
}

// generatorConfig is the generator of a lease of slot, from floor to
// ceiling, as c configures it.
func (c Config) generatorConfig(slot snowflake.Slot, floor, ceiling int64) snowflake.Config {
	return snowflake.Config{Slot: slot, Floor: floor, Ceiling: ceiling,
		MaxRollbackWait: c.MaxRollbackWait, Clock: c.Clock,
		OnClockBack: c.OnClockBack, MaxLead: c.clockLead(), SequenceStart: c.SequenceStart}
}

// validateGenerator holds the generator's fields to snowflake.Config's
// rules, which are written there only; its MaxLead is our MaxClockLead.
func (c Config) validateGenerator() error {
	g := c.generatorConfig(snowflake.Slot{}, 0, 0)
	g.MaxLead = c.MaxClockLead // the value given, not the one in force
	return configerr.Renamed(g.Validate(), func(field string) string {
		if field == "MaxLead" {
			return "MaxClockLead"
		}
		return field
	})
}

// DefaultHorizon rides out a ZooKeeper outage of 30 s: the reservation a
// holder confirmed just before it (at least Horizon - Renew ahead) lasts
// through the outage, the ensemble's restart and the reconnect (about 4 s
// in the chaos suite), with room to spare.
const DefaultHorizon = 40 * time.Second

// DefaultStandbyHorizon is the reservation while a standby waits: a crashed
// holder's slot passes on within about the session timeout plus this.
const DefaultStandbyHorizon = 5 * time.Second

// DefaultMaxClockLead is the logical clock's default bound: the default
// standby horizon, the most Validate accepts with it.
const DefaultMaxClockLead = DefaultStandbyHorizon

// standbyHorizon is the reservation while a standby waits: StandbyHorizon,
// never beyond Horizon; Horizon when StandbyHorizon is 0.
func (c Config) standbyHorizon() time.Duration {
	if c.StandbyHorizon == 0 {
		return c.Horizon
	}
	return min(c.StandbyHorizon, c.Horizon)
}

// clockLead is the logical clock's bound in force: MaxClockLead, but never
// beyond Horizon, which bounds the ceiling anyway.
func (c Config) clockLead() time.Duration { return min(c.MaxClockLead, c.Horizon) }

// standbyListWait bounds how long a renew waits for its listing of
// standby/ (standbyView.list): a quarter of Renew, so that the listing and
// a write taking the whole call timeout fit the standby horizon (1 s +
// 250 ms + 3 s < 5 s with the defaults).
func (c Config) standbyListWait() time.Duration { return min(c.Renew/4, c.callTimeout()) }

// callTimeout bounds one ZooKeeper call: go-zookeeper has no request
// timeouts of its own.
func (c Config) callTimeout() time.Duration {
	return min(max(c.SessionTimeout/2, 200*time.Millisecond), 5*time.Second)
}
