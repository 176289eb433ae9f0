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
// Run opens a ZooKeeper session and runs the lease loop on it, a new
// session after one the ensemble refused. The lease loop is a switch over
// its states (leaseloop.go: run), each a method that runs until the loop
// leaves it and returns the next:
//
//	checkingRoot    read and check the root, waiting for init
//	                -> claiming; waitingRecover first in a session that
//	                follows one the ensemble refused
//	waitingRecover  claim nothing until recover ran -> claiming;
//	                checkingRoot when the root is gone
//	claiming        list leases/, create our node, the lowest wins,
//	                reserve -> serving (won), standingBy (no slot free),
//	                waitingRecover (a restore seen), checkingRoot (damage)
//	standingBy      wait for a change of leases/ -> claiming
//	serving         issue IDs, renew -> claiming (lost), done (released)
//	sessionRefused  from claiming or serving: Run opens a new session
//	done            from any state: ctx ended, or a fault retrying
//	                cannot fix
//
// The files (every one but this doc.go, which TestDocNamesEveryFile
// checks), in the order the loop reaches them: coordinator.go (the
// Coordinator; Run, and the session the lease loop runs on), leaseloop.go
// (the lease loop: its states, the switch, what the states hand each
// other), then a file for each state and the steps it alone takes: root.go
// (checkingRoot: the root read and checked, made by init only, its bound,
// damage reported; trust.go, the tree's ACLs checked at start and at each
// claim, tree.ErrUntrustedTree; scope.go, the root's datacenters and the
// fleet registry), rollback.go (waitingRecover, and the restore detector
// from lease sequences; refusal.go, a session refused for its zxid),
// claim.go (claiming: the lease type; list leases/, create our node, the
// lowest sequence wins), reserve.go (claiming's first fenced write: wait
// past the stored reservation R, or avoid a slot reserved too far past
// our clock, then write; its outcome named), resume.go
// (a lease lost with our session: its slot claimed again at once from the
// last ID we issued while nobody has written it since), standby.go
// (standingBy, and our standby node: shown while every slot we may take is
// held; the herd's wait), hold.go (serving: the generator is made and IDs
// are served; the renew loop, shortened while a standby waits; a lost
// lease; outage.go, an outage of ZooKeeper said once when it starts and
// ends; standbyview.go, the standbys a holder sees waiting for its range),
// release.go (seal, lower the reservation, delete the node). Steps the
// states share: fence.go (the reservation rule, the one helper that writes
// a reservation, the fenced Multi and how its result is classified, the
// skew it measures; tenure.go, our tenure as each fenced write records it
// in the slot's history), avoid.go (a slot found unusable: refused,
// undecodable, missing or reserved too far ahead, reported by the steps
// and avoided by claiming and serving alone; waiting.go says once a
// situation why none can be claimed), session.go (the ZooKeeper session:
// dialled, its events, credentials, bounded calls, the protected create
// and the guaranteed delete of our nodes). Beside the loop: readiness.go
// (the one verdict on whether IDs may be issued now, which the worker's
// refusals, /readyz, /status and INFO format), clocklead.go (the logical
// clock's lead and the clock steps seen), fleetfigures.go (what this
// process exports for Prometheus to sum into the fleet's held and free
// slots: its slot, its root's datacenters), slotmap.go (the slot map read
// for a running Coordinator) and mapsession.go (the session of its own
// that read runs on), metrics.go, configmetrics.go, idspace.go (the end of
// the ID space: a claim refused past it, the time left), config.go,
// kind.go (what holds a lease: a worker, or a program embedding it
// through package idlease).
package coordinator
