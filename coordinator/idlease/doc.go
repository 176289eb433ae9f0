// Package idlease lets a Go program issue Snowflake IDs to itself, without
// a network hop, from a slot it leases in a snowfleet fleet's ZooKeeper
// tree exactly as a snowflaked worker does: the same claim, the same fenced
// reservations, the same release, so the same guarantee — no ID is issued
// twice, across this process, its restarts and every worker or embedded
// program that holds the slot before or after it.
//
// Open claims a slot and returns once ZooKeeper has confirmed a
// reservation. Next and NextN issue from the lease's generator, which never
// issues a timestamp above the confirmed ceiling and is sealed the moment
// the lease is in doubt; while the lease is being claimed again they wait,
// up to the caller's context, for the new one. Close releases the slot as a
// worker's SIGTERM does, so that a successor takes it at once.
//
// The lease node says kind "embedded" and the program's name:
// snowflakectl slots, a worker's /slots page and the fleet figures show it,
// and client discovery never routes ID requests to it.
//
// The files: config.go (Config: the coordinator's, kind embedded),
// lease.go (Open, New, Close, the actor pair), next.go (Next, NextN and
// the wait for a lease), ready.go (readiness: wait, read, HTTP),
// registered.go (what Open registered in the caller's registry, taken out
// again by Close), errors.go, metrics.go. See README.md for when to embed and when to call
// the fleet.
package idlease
