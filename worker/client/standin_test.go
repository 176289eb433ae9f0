package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
)

// standIn is a worker stand-in for the client's own tests: it answers
// NEXTID and NEXTIDS with ascending IDs like a worker, but can be made slow,
// paused, restarted or made to refuse with -NOLEASE, which a real worker
// cannot be made to do on cue. Each connection is served in order, one
// request at a time, as a worker does.
type standIn struct {
	t    testing.TB
	addr string

	delay   atomic.Int64 // ns each reply waits
	noLease atomic.Bool  // answer -NOLEASE instead of IDs
	id      atomic.Int64
	served  atomic.Int64 // ID replies written

	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]struct{}
	paused   chan struct{} // non-nil while paused: replies wait for its close
	arrivals []time.Time   // when each request was read
}

func newStandIn(t testing.TB) *standIn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &standIn{t: t, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	s.id.Store(1 << 30)
	s.serve(ln)
	t.Cleanup(func() { s.stop() })
	return s
}

// setDelay makes every reply wait d.
func (s *standIn) setDelay(d time.Duration) { s.delay.Store(int64(d)) }

// pause holds every reply until resume, as a long GC pause or a SIGSTOP does.
func (s *standIn) pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused == nil {
		s.paused = make(chan struct{})
	}
}

func (s *standIn) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused != nil {
		close(s.paused)
		s.paused = nil
	}
}

// restart closes the listener and every connection, refuses connections
// for down, and listens again on the same address: a worker restart.
func (s *standIn) restart(down time.Duration) {
	s.stop()
	time.Sleep(down)
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Errorf("stand-in: listen again on %s: %v", s.addr, err)
		return
	}
	s.serve(ln)
}

func (s *standIn) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln != nil {
		s.ln.Close()
		s.ln = nil
	}
	for c := range s.conns {
		c.Close()
		delete(s.conns, c)
	}
}

func (s *standIn) arrivalTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.arrivals...)
}

func (s *standIn) serve(ln net.Listener) {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			if s.ln != ln {
				s.mu.Unlock()
				c.Close()
				return
			}
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			go s.handle(c)
		}
	}()
}

func (s *standIn) handle(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		req, err := readRequest(r)
		if err != nil {
			return
		}
		// The reply and its delay are decided when the request arrives, as a
		// worker decides before it answers.
		reply, delay := s.reply(req), time.Duration(s.delay.Load())
		s.mu.Lock()
		s.arrivals = append(s.arrivals, time.Now())
		paused := s.paused
		s.mu.Unlock()
		if paused != nil {
			<-paused
		}
		time.Sleep(delay)
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// reply answers one raw RESP request.
func (s *standIn) reply(req string) string {
	if s.noLease.Load() {
		return "-NOLEASE no lease held: stand-in told to refuse\r\n"
	}
	parts := strings.Split(req, "\r\n")
	if len(parts) < 3 {
		return "-ERR empty request\r\n"
	}
	switch parts[2] {
	case "NEXTID":
		s.served.Add(1)
		return fmt.Sprintf(":%d\r\n", s.id.Add(1))
	case "NEXTIDS":
		var n int64
		if len(parts) < 5 {
			return "-ERR NEXTIDS needs a count\r\n"
		}
		if _, err := fmt.Sscan(parts[4], &n); err != nil || n < 1 || n > MaxBatch {
			return fmt.Sprintf("-ERR bad count %q\r\n", parts[4])
		}
		s.served.Add(1)
		last := s.id.Add(n)
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", n)
		for id := last - n + 1; id <= last; id++ {
			fmt.Fprintf(&b, ":%d\r\n", id)
		}
		return b.String()
	}
	return fmt.Sprintf("-ERR unknown command %q\r\n", parts[2])
}

// logCounter counts the client's log lines that put a worker into backoff:
// the first of a streak ("worker failed, trying others") and the rest
// ("worker failed again", at debug level).
type logCounter struct {
	first, again atomic.Int64
}

func (l *logCounter) Write(p []byte) (int, error) {
	s := string(p)
	switch {
	case strings.Contains(s, "worker failed, trying others"):
		l.first.Add(1)
	case strings.Contains(s, "worker failed again"):
		l.again.Add(1)
	}
	return len(p), nil
}

func (l *logCounter) backoffs() int64 { return l.first.Load() + l.again.Load() }

// newCountingClient is a client of the stand-ins whose backoffs are counted
// from its log, as they would be by an operator reading it.
func newCountingClient(t *testing.T, cfg Config, ws ...*standIn) (*Client, *logCounter) {
	t.Helper()
	for _, w := range ws {
		cfg.Static = append(cfg.Static, w.addr)
	}
	lc := &logCounter{}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: lc})
	c, err := New(cfg, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, lc
}

// callAll makes n concurrent Next calls, each with its own timeout, and
// returns their errors.
func callAll(c *Client, n int, timeout time.Duration) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, errs[i] = c.Next(ctx)
		}()
	}
	wg.Wait()
	return errs
}

func countErrs(errs []error) (n int, first error) {
	for _, err := range errs {
		if err != nil {
			if n == 0 {
				first = err
			}
			n++
		}
	}
	return n, first
}
