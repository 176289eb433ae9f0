// Package client is the Go client of a snowfleet fleet: it finds the workers
// (from the lease nodes in ZooKeeper, watched for changes, or from a static
// address list), keeps a small pool of persistent connections to each,
// spreads calls across the healthy ones (power of two choices on in-flight
// calls) and retries on another worker when one answers -NOLEASE or
// -CLOCKBACK or its connection breaks, within the caller's deadline.
//
// A worker is left out (backed off) only for its own failures: the wait for
// a pooled connection and the caller's own deadline count against nobody,
// and the requests a restart breaks all at once are one failure, not one
// each. Backoffs and the wake-up of callers waiting for a worker are
// jittered, so that clients do not return to the fleet in step.
//
// It speaks RESP2 itself rather than through a Redis library: the ID
// commands need three reply types (integer, array of integers, error), and a
// hand-written reader parses the integers straight out of the read buffer
// into the caller's slice, so Next allocates nothing (given a ctx with a
// deadline; without one, the CallTimeout context is the call's allocation)
// and NextN only its result. Batches are NEXTRANGE requests, one short
// reply for a run of up to 4,096 IDs (NEXTIDS on a worker without it), and
// the prefetch behind Next draws such runs from every worker at once. The
// reply codes, the integer parser and the request encoders are package
// worker/resp, which the worker answers with.
// Conn, the single-connection building block, is exported for tools that
// pipeline (snowflakectl bench).
//
// Every ID a call returns has been checked: positive, of the slot of the
// worker's lease node, and for NextN and NextRange exactly n of them,
// consecutive within one millisecond.
package client
