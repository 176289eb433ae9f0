package worker

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/worker/resp"
)

// ErrServerClosed: Serve was called on a server that was shut down.
var ErrServerClosed = errors.New("worker: server closed")

// Server is the RESP ID service. Serve is an oklog/run actor's execute,
// Shutdown its interrupt.
type Server struct {
	cfg   Config
	lease IDSource
	// httpTokens are the digests of the admin port's bearer tokens
	// (SetHTTPTokens); nil: none required.
	httpTokens atomic.Pointer[[][sha256.Size]byte]
	log        hclog.Logger
	m          *metrics
	cmds       commandTable
	auth       *auth // passwords in force (auth.go)
	// tlsFailures counts failed TLS handshakes (tls.go).
	tlsFailures prometheus.Counter

	started  time.Time
	open     atomic.Int64 // connections open now
	accepted atomic.Int64 // connections accepted, also the next connection id
	draining atomic.Bool
	leaving  atomic.Bool // BeginShutdown: not ready, still serving
	// killed: the drain timed out (or the listener broke) and every
	// connection is being closed, replies written or not.
	killed atomic.Bool
	// fair is fairness counted in IDs (fairids.go): who asks for the
	// generator's IDs, and which light requests wait for them.
	fair idFair
	// rejecting bounds the connections refused at MaxConns that linger at
	// once (see reject).
	rejecting chan struct{}
	// bufs keeps connections' buffers for the next ones (bufcache.go).
	bufs bufCache
	// outLog rate-limits the log lines of the output limit (outlimit.go).
	outLog everyLog

	// loops serve the TCP connections, one per P, each a share of them
	// (Linux, unless Config.NoEventLoop); none: a goroutine per connection.
	loops []*loop
	// turns gates the backlogs of the goroutine-per-connection transport
	// (turns.go).
	turns *backlogTurns

	mu       sync.Mutex
	lns      []net.Listener // Serve's and ServeTLS's
	conns    map[*conn]struct{}
	wg       sync.WaitGroup // one per connection goroutine
	shutdown chan struct{}  // closed by Shutdown
	done     chan struct{}  // closed when drained
	doneOnce sync.Once
}

// New returns a server taking IDs from lease. reg may be nil.
func New(cfg Config, lease IDSource, log hclog.Logger, reg prometheus.Registerer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("new worker: %w", err)
	}
	if lease == nil {
		return nil, fmt.Errorf("new worker: lease is nil")
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	cmds := newCommands()
	s := &Server{
		cfg: cfg, lease: lease, log: log, cmds: cmds,
		started: time.Now(), conns: map[*conn]struct{}{},
		shutdown: make(chan struct{}), done: make(chan struct{}),
		rejecting: make(chan struct{}, maxRejectLingers),
		turns:     newBacklogTurns(runtime.GOMAXPROCS(0)),
	}
	m, err := newMetrics(reg, cmds, &s.open, &s.accepted)
	if err != nil {
		return nil, fmt.Errorf("new worker: %w", err)
	}
	if reg != nil {
		if err := reg.Register(newSlotInfo(lease)); err != nil {
			return nil, fmt.Errorf("new worker: register slot info: %w", err)
		}
	}
	a, err := newAuth(reg)
	if err != nil {
		return nil, fmt.Errorf("new worker: %w", err)
	}
	if err := s.fair.register(reg); err != nil {
		return nil, fmt.Errorf("new worker: %w", err)
	}
	tlsFailures, err := newTLSFailures(reg)
	if err != nil {
		return nil, fmt.Errorf("new worker: %w", err)
	}
	s.m, s.auth, s.tlsFailures = m, a, tlsFailures
	return s, nil
}

// Serve accepts connections on ln until Shutdown, then returns nil (after
// the connections drained, so that the caller may release the lease next).
// It returns an error if ln fails for good.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.lns = append(s.lns, ln)
	if !s.cfg.NoEventLoop && len(s.lns) == 1 {
		s.startLoops(runtime.GOMAXPROCS(0))
	}
	s.mu.Unlock()
	if err := tuneListener(ln, s.cfg.ClientOutputLimit); err != nil {
		s.log.Warn("cannot set the socket buffers of connections; the system's defaults stay", "error", err)
	}
	s.log.Info("serving ids", "addr", ln.Addr().String(), "max_conns", s.cfg.MaxConns)
	err := s.accept(ln)
	if s.draining.Load() {
		<-s.done
		return nil
	}
	// The listener broke without Shutdown: close what is open and report.
	s.closeAll()
	s.wg.Wait()
	s.finish()
	return fmt.Errorf("worker: accept: %w", err)
}

func (s *Server) accept(ln net.Listener) error {
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.draining.Load() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: back off, as
				// net/http does, instead of spinning or quitting.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "error", err, "backoff", backoff)
				select {
				case <-time.After(backoff):
				case <-s.shutdown:
				}
				continue
			}
			return err
		}
		backoff = 0
		if s.open.Load() >= int64(s.cfg.MaxConns) {
			s.reject(nc)
			continue
		}
		// A TLS connection is asked after its handshake (serveConn): its
		// client certificate counts.
		if _, plain := nc.(*net.TCPConn); plain && s.protectedDenies(nc) {
			s.m.denied.Inc()
			s.refuse(nc, "-"+replyDenied+"\r\n")
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		c := newConn(s, nc, s.accepted.Add(1))
		s.mu.Lock()
		if s.draining.Load() {
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.open.Add(1)
		adopted := len(s.loops) > 0 && s.loops[c.id%int64(len(s.loops))].adopt(c, nc)
		s.mu.Unlock()
		if !adopted {
			go s.serveConn(newGoConn(c, nc))
		}
	}
}

// startLoops starts n epoll loops, or none if the first cannot be made
// (not Linux: none ever).
func (s *Server) startLoops(n int) {
	var loops []*loop
	for range n {
		l, err := newLoop(s)
		if err != nil {
			s.log.Warn("cannot make an epoll loop", "error", err)
		}
		if l == nil {
			break
		}
		loops = append(loops, l)
	}
	s.loops = append(s.loops, loops...)
	for _, l := range loops {
		l.siblings = loops
		go l.run()
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// rejectTLSTimeout bounds the answer to a refused TLS connection, its
// handshake included.
const rejectTLSTimeout = time.Second

// rejectTLS answers a refused TLS connection off the accept loop: its first
// write runs the handshake, which reads from the client (one silent
// connection froze the TLS port that way). It is bounded as the lingering
// refusals are: past maxRejectLingers at once, a refused one is closed.
func (s *Server) rejectTLS(nc net.Conn) {
	select {
	case s.rejecting <- struct{}{}:
	default:
		nc.Close()
		return
	}
	go func() {
		defer func() { <-s.rejecting }()
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(rejectTLSTimeout))
		_, _ = nc.Write([]byte("-ERR max number of clients reached\r\n"))
	}()
}

// maxRejectLingers is how many refused connections may linger at once;
// past it, a refused connection is closed at once, so a flood of them
// costs no more than that many file descriptors for lingerTime.
const maxRejectLingers = 64

// reject answers one connection past MaxConns, as Redis does, and closes
// it (refuse; a TLS one off the accept loop, rejectTLS).
func (s *Server) reject(nc net.Conn) {
	s.m.rejected.Inc()
	if _, plain := nc.(*net.TCPConn); !plain {
		s.rejectTLS(nc)
		return
	}
	s.refuse(nc, "-ERR max number of clients reached\r\n")
}

// refuse writes reply to a plaintext connection the server will not serve
// and closes it, lingering (in a goroutine of its own) so that a client
// that already sent a request reads the error instead of a reset; the
// accept loop never waits on it for long.
func (s *Server) refuse(nc net.Conn, reply string) {
	_ = nc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	_, err := nc.Write([]byte(reply))
	tc, ok := nc.(*net.TCPConn)
	if err != nil || !ok {
		nc.Close()
		return
	}
	select {
	case s.rejecting <- struct{}{}:
	default:
		nc.Close()
		return
	}
	go func() {
		defer func() { <-s.rejecting }()
		defer nc.Close()
		if tc.CloseWrite() != nil || nc.SetReadDeadline(time.Now().Add(lingerTime)) != nil {
			return
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(nc, lingerBytes))
	}()
}

func (s *Server) serveConn(g *goConn) {
	defer func() {
		g.nc.Close()
		s.release(g.c)
	}()
	if !s.handshake(g.nc) {
		return
	}
	if s.protectedDenies(g.nc) {
		s.m.denied.Inc()
		g.c.wbuf = resp.AppendError(g.c.wbuf, replyDenied)
		g.lingerClose()
		return
	}
	g.serve()
}

// release forgets a closed connection.
func (s *Server) release(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.bufs.put(c.rbuf)
	s.bufs.put(c.wbuf)
	c.rbuf, c.wbuf, c.r, c.w = nil, nil, 0, 0
	s.open.Add(-1)
	s.wg.Done()
}

// Shutdown stops accepting, lets every connection finish the requests it
// has received (replies written), closes idle connections at once, and
// returns when all are closed. When ctx ends first (or DrainTimeout passes)
// the remaining connections are closed. Safe to call twice, and before or
// after Serve.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	first := !s.draining.Swap(true)
	if first {
		close(s.shutdown)
		for _, ln := range s.lns {
			ln.Close()
		}
		// Wake every connection blocked in a read; see goConn.serve for why
		// this cannot miss one.
		now := time.Now()
		for c := range s.conns {
			_ = c.nc.SetReadDeadline(now)
		}
		for _, l := range s.loops {
			l.wake()
		}
	}
	s.mu.Unlock()
	if !first {
		select {
		case <-s.done:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
	defer cancel()
	drained := make(chan struct{})
	go func() { s.wg.Wait(); close(drained) }()
	var err error
	select {
	case <-drained:
		s.log.Info("connections drained")
	case <-ctx.Done():
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		s.log.Warn("drain timed out; closing connections", "open", n, "timeout", s.cfg.DrainTimeout)
		s.closeAll()
		// Every transport sees the kill within a slice (a goroutine's
		// write fails, a loop closes all in its next round); the bound is
		// for a bug, so that Shutdown keeps its promise whatever happens.
		select {
		case <-drained:
		case <-time.After(killWait):
			s.log.Error("connections still open after they were closed", "wait", killWait)
		}
		err = fmt.Errorf("worker: drain: %w", ctx.Err())
	}
	s.finish()
	return err
}

// killWait bounds how long Shutdown waits for the connections it closed
// after DrainTimeout.
const killWait = time.Second

func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killed.Store(true)
	for _, l := range s.loops {
		l.kill()
	}
	for c := range s.conns {
		c.nc.Close()
	}
}

// revoke closes conns from outside their transports (a rotation dropped
// their password): a goroutine's read or write fails on its closed socket;
// an epoll loop, woken once, closes the duplicates it serves (loop.woken).
// Each is closed on a goroutine of its own: a TLS close writes an alert,
// which may wait on a client that does not read.
func (s *Server) revoke(conns []*conn) {
	if len(conns) == 0 {
		return
	}
	for _, c := range conns {
		c.revoked.Store(true)
		go c.nc.Close()
	}
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	for _, l := range loops {
		l.revoke()
	}
}

func (s *Server) finish() { s.doneOnce.Do(func() { close(s.done) }) }

// Done is closed once the server has stopped and every connection is
// closed: no request is in flight any more.
func (s *Server) Done() <-chan struct{} { return s.done }

// Draining reports whether Shutdown was called.
func (s *Server) Draining() bool { return s.draining.Load() }
