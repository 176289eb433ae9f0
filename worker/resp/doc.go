// Package resp is the part of RESP2 (the Redis protocol) that the worker's
// server and its Go client share: the reply codes a worker puts first in an
// error reply, the strict integer parser both sides read numbers with, and
// the encoders that append replies (and requests, which are arrays of bulk
// strings) to a buffer without allocating.
//
// The server's request parser stays in package worker: only the server
// reads requests.
package resp
