// Package coordinator leases one Snowflake slot (datacenter, machine) out of
// 1,024 from ZooKeeper and keeps a snowflake.Generator inside the timestamps
// that lease has reserved in ZooKeeper, so that no two holders of a slot, at
// any time, issue overlapping timestamps.
//
// The znode layout under the root (default /snowflake):
//
//	/snowflake              persistent, JSON {layout, epoch_ms, bits, created,
//	                        datacenters, max_horizon_ms, max_skew_ms, recovery}
//	/snowflake/leases/      ephemeral sequential (protected) nodes, one a claim:
//	  _c_<guid>-dc07-m13-0000000042   JSON {addr, http, host, pid, version, since,
//	                                        kind (worker|embedded), program}
//	/snowflake/slots/       all 1,024 persistent slot nodes, made with the root:
//	  dc07-m13              JSON {reserved_until_ms, last_ms, holder, updated_ms}
//	/snowflake/standby/     made with the root; one ephemeral (protected) node
//	                        per waiting standby:
//	  _c_<guid>-dc07-s<session>  JSON {addr, http, host, pid, version, since, kind, program}
//
// Only snowflakectl init (InitRoot) makes a root, reserving its slot nodes
// past what an earlier incarnation could still issue. A missing slot node
// (or root, leases/, slots/), or one without a valid reservation, is
// damage: workers refuse it and never re-create it; snowflakectl repair
// does, with RepairSlots. After a restore from a backup, snowflakectl
// recover (RecoverRoot) raises every slot past what was issued since.
// With credentials the operator owns the tree, the workers may create and
// delete in leases/ and standby/ and write the slot nodes, the world reads
// (FleetACL); a worker refuses a tree the world may write (trust.go), and
// snowflakectl secure (SecureTree) puts one right.
//
// A Coordinator is an actor for an oklog/run group: Run claims a slot, serves
// it through Generator, renews the reservation with a fenced Multi, and on
// cancel seals the generator and releases the slot. ReadSlotMap reads the
// same layout for operators.
//
// Two leaf packages hold what readers of the layout share, so that the
// public client (worker/client) imports them and not this package:
// coordinator/zklayout (the paths, DefaultRoot and ValidRoot, lease node
// names and JSON, the kinds, LeaseInfo, ReadLeases and WatchLeases) and
// coordinator/zkconn (Dial and DialTLS, the TLS files and their reload,
// digest auth, parallel reads on one session).
//
// The files (every one but this doc.go, which TestDocNamesEveryFile checks)
// read in protocol order, each calling forward into the next:
// coordinator.go (the Coordinator, and Run, which drives the rest, a new
// session after a refused one), root.go (the root read and checked: made by
// init only, its bound, damage reported), trust.go (the tree's ACLs
// checked at start and at each claim: ErrUntrustedTree), claim.go (the lease type; list
// leases/, create our node, the lowest sequence wins, wait past the stored
// reservation R, the first fenced write), hold.go (the generator is made and
// IDs are served; the renew loop, shortened while a standby waits; a lost
// lease), standby.go (the standby nodes: made by a standby, listed by
// holders), release.go (seal, lower the reservation, delete the node).
// Below them: fence.go (the reservation rule, the one helper that writes a
// reservation, the fenced Multi and how its result is classified, the skew
// it measures), avoid.go (a slot found unusable: refused, undecodable,
// missing or reserved too far ahead, reported by the steps and avoided by
// the claim and hold loops alone), claimer.go (one Run's claim state on
// its ZooKeeper session), session.go (that session: dialled, its events,
// credentials, bounded calls, the protected create and the guaranteed
// delete of our nodes), rollback.go and refusal.go (an ensemble seen gone
// back in time: a lease numbered below one seen, a session refused for its
// zxid), slotmap.go (the read-only slot map for
// operators) and mapsession.go (the session of its own a Coordinator reads
// it on), layout.go (the layout names, the root's and the slot nodes'
// JSON). The operator's side: acl.go (FleetACL, the operator/worker/world
// ACL scheme), init.go (InitRoot), slotnodes.go (the slot
// nodes made in batched Multis, and RepairSlots), recover.go
// (RecoverRoot), secure.go (SecureTree), fleetscan.go and dcset.go (other fleets' roots, datacenter
// ranges), authfile.go (the credentials file). Beside them: readiness.go
// (the one verdict on whether IDs may be issued now, which the worker's
// refusals, /readyz, /status and INFO format), clocklead.go (the logical
// clock's lead and the clock steps seen), fleetgauges.go (the fleet gauges from
// one watch on leases/), metrics.go, configmetrics.go, config.go,
// kind.go (what holds a lease: a worker, or a program embedding
// it through package idlease).
package coordinator
