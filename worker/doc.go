// Package worker serves Snowflake IDs over the Redis protocol (RESP2), so
// redis-cli, redis-benchmark and any Redis client library are clients, and
// serves the worker's admin HTTP endpoints (/metrics, /healthz, /readyz,
// /status).
//
// IDs come from the lease's current generator (a coordinator.Coordinator in
// snowflaked); while no lease is held, or the lease is not ready, every ID
// command answers -NOLEASE or -CLOCKBACK and /readyz is 503.
//
// Each connection is a protocol state machine (conn.go) with small buffers
// of its own: a hand-written parser works in place on the read buffer (no
// copy, no allocation per request, hard limits on every length before
// anything is allocated), and replies are appended to a write buffer that
// is flushed after each slice of at most 16 requests, so a pipeline of 16
// costs one read and one write, and no connection's backlog holds up the
// others for more than a slice. Commands are
// rows of one table (commands.go); the RESP encoding is package resp.
//
// Two transports drive the state machine: on Linux, GOMAXPROCS epoll loops,
// each serving its share of the connections from one goroutine
// (loop_linux.go, evconn_linux.go); elsewhere, or with Config.NoEventLoop,
// each connection has a goroutine of its own (serve.go).
package worker
