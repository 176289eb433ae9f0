// Package coordinator is the lease: it leases one Snowflake slot
// (datacenter, machine) out of 1,024 from ZooKeeper and keeps a
// snowflake.Generator inside the timestamps that lease has reserved in
// ZooKeeper, so that no two holders of a slot, at any time, issue
// overlapping timestamps. A worker (snowflaked) runs one, and so does a Go
// program that embeds a lease (package idlease).
//
// The fleet's tree that the lease reads and writes (its znode layout and
// codecs, the ACL scheme, the fleet registry, the slot map) and the operator's
// verbs on it (init, repair, recover, secure) are package
// coordinator/tree, which this package imports and snowflakectl uses
// without linking the lease. Two leaf packages hold what every reader of
// the layout shares, so that the public client (worker/client) imports
// neither: coordinator/zklayout (the paths, lease node names and JSON, the
// kinds, ReadLeases and WatchLeases) and coordinator/zkconn (dialling, TLS,
// digest auth and the credentials file, bounded and parallel calls).
//
// A Coordinator is an actor for an oklog/run group: Run claims a slot,
// serves it through Generator, renews the reservation with a fenced Multi,
// and on cancel seals the generator and releases the slot.
//
// The files (every one but this doc.go, which TestDocNamesEveryFile
// checks): coordinator.go (the Coordinator, and Run, which drives the
// rest, a new session after a refused one), root.go (the root read and
// checked: made by init only, its bound, damage reported), scope.go (the
// root's datacenters, and the scan for other fleets that owns one of them),
// trust.go (the tree's ACLs checked at start and at each claim:
// tree.ErrUntrustedTree), claim.go (the lease type; list leases/, create
// our node, the lowest sequence wins, wait past the stored reservation R,
// the first fenced write: reserve.go, whose outcome is named), hold.go (the generator is made and IDs are
// served; the renew loop, shortened while a standby waits; a lost lease;
// outage.go, an outage of ZooKeeper said once when it starts and ends),
// resume.go (a lease lost with our session: its slot claimed again at once
// from the last ID we issued while nobody has written it since),
// standby.go (a standby of its own: its node, shown while every slot it
// may take is held, and the herd's wait), standbyview.go (what a holder
// sees of standby/: the standbys waiting for its range),
// release.go (seal, lower the reservation, delete the node). Below them:
// fence.go (the reservation rule, the one helper that writes a
// reservation, the fenced Multi and how its result is classified, the skew
// it measures; tenure.go, our tenure as each fenced write records it in
// the slot's history), avoid.go (a slot found unusable: refused, undecodable,
// missing or reserved too far ahead, reported by the steps and avoided by
// the claim and hold loops alone; waiting.go says once a situation why
// none can be claimed), claimer.go (one Run's claim state on its
// ZooKeeper session), session.go (that session: dialled, its events,
// credentials, bounded calls, the protected create and the guaranteed
// delete of our nodes), rollback.go and refusal.go (an ensemble seen gone
// back in time: a lease numbered below one seen, a session refused for its
// zxid). Beside them: readiness.go (the one verdict on whether IDs may be
// issued now, which the worker's refusals, /readyz, /status and INFO
// format), clocklead.go (the logical clock's lead and the clock steps
// seen), fleetfigures.go (what this process exports for Prometheus to sum
// into the fleet's held and free slots: its slot, its root's datacenters),
// slotmap.go (the slot map read for a running Coordinator) and
// mapsession.go (the session of its own that read runs on), metrics.go,
// configmetrics.go,
// idspace.go (the end of the ID space: a claim refused past it, the time
// left), config.go, kind.go (what holds a lease: a worker, or a program embedding
// it through package idlease).
package coordinator
