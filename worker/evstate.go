package worker

import "time"

// evState is what the epoll loop keeps per connection besides the buffers
// conn already has. The loop is one goroutine, so none of it is locked.
type evState struct {
	l  *loop // nil: not under a loop
	fd int   // the socket, non-blocking; -1 once closed

	// out is how much of wbuf was written before the socket filled; while
	// blocked the loop waits for EPOLLOUT instead of EPOLLIN, so a client
	// that does not read its replies is not read from either.
	out     int
	blocked bool
	// closing: close once wbuf is written (QUIT, an error reply, a drain);
	// lingerNext: linger (see conn.linger) instead of closing.
	closing    bool
	lingerNext bool
	// lingering: the write side is shut; input is read and dropped until
	// EOF, lingerBytes or lingerUntil.
	lingering   bool
	lingered    int
	lingerUntil time.Time
}
