package zktest

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy in front of one target. Blackhole stops
// delivering bytes both ways without closing anything, like a network that
// drops packets: the client sees silence, its session times out on the
// server, and nothing it sent reaches the server until Heal. Bytes held during
// the blackhole are delivered after Heal, as TCP retransmission would.
// SetDelay makes the server slow instead: each answer reaches the client
// that much late.
type Proxy struct {
	t      testing.TB
	target string
	ln     net.Listener
	delay  atomic.Int64 // ns each chunk from the server is held

	mu      sync.Mutex
	open    chan struct{} // closed while traffic flows
	conns   map[net.Conn]struct{}
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup
}

// NewProxy listens on a free loopback port and forwards to target. It is
// closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zktest: proxy listen: %v", err)
	}
	p := &Proxy{t: t, target: target, ln: ln, open: make(chan struct{}),
		conns: map[net.Conn]struct{}{}, closing: make(chan struct{})}
	close(p.open)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's address, for the client's server list.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Blackhole stops all traffic through the proxy, on open and new connections.
// Safe to call twice.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default:
	}
}

// Heal lets traffic flow again. Safe to call twice.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// SetDelay holds every chunk the server sends for d before the client gets
// it (0: none), like a slow server: each answer arrives d late, and answers
// to calls in flight together arrive d late each, not one after the other.
// Order is kept. It applies to chunks read from now on.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Blackholed reports whether traffic is stopped.
func (p *Proxy) Blackholed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		return false
	default:
		return true
	}
}

// Reset closes every connection through the proxy at once (the client sees a
// reset) and keeps accepting new ones.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Close stops the proxy and closes every connection. Safe to call twice.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.closing)
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// wait blocks while the proxy is blackholed; false means the proxy closed.
func (p *Proxy) wait() bool {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	select {
	case <-open:
		return true
	case <-p.closing:
		return false
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	defer p.untrack(client)
	// A connection opened during a blackhole reaches the server after Heal.
	if !p.wait() {
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	p.wg.Add(2)
	go p.pipe(server, client, nil, done)
	go p.pipe(client, server, &p.delay, done)
	<-done
}

// pipe copies src to dst, holding each chunk while blackholed, and until
// *delay after it was read when delay is given. An end of stream is held
// too, then passed on as a close.
func (p *Proxy) pipe(dst, src net.Conn, delay *atomic.Int64, done chan<- struct{}) {
	defer p.wg.Done()
	defer func() { done <- struct{}{} }()
	write := func(b []byte, _ time.Time) error { _, err := dst.Write(b); return err }
	var line *delayLine
	if delay != nil {
		line = newDelayLine(dst, p.closing)
		write = line.write
	}
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		read := time.Now()
		if !p.wait() {
			if line != nil {
				line.close()
			}
			return
		}
		if n > 0 {
			due := read
			if delay != nil {
				due = read.Add(time.Duration(delay.Load()))
			}
			if werr := write(buf[:n], due); werr != nil {
				if line != nil {
					line.close()
				}
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				src.Close()
			}
			if line != nil {
				line.close() // what is held goes first
			}
			dst.Close()
			return
		}
	}
}

// delayLine writes chunks to dst in order, each at its due time.
type delayLine struct {
	dst     net.Conn
	closing <-chan struct{}
	q       chan heldChunk
	done    chan struct{}
	failed  atomic.Bool
}

type heldChunk struct {
	b   []byte
	due time.Time
}

var errDelayLine = errors.New("zktest: proxy delay line: write failed")

func newDelayLine(dst net.Conn, closing <-chan struct{}) *delayLine {
	l := &delayLine{dst: dst, closing: closing, q: make(chan heldChunk, 256), done: make(chan struct{})}
	go l.run()
	return l
}

func (l *delayLine) run() {
	defer close(l.done)
	for c := range l.q {
		if l.failed.Load() {
			continue // drain
		}
		if d := time.Until(c.due); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-l.closing:
				t.Stop()
				l.failed.Store(true)
				continue
			}
		}
		if _, err := l.dst.Write(c.b); err != nil {
			l.failed.Store(true)
		}
	}
}

// write queues a copy of b for due; it fails once a write to dst has.
func (l *delayLine) write(b []byte, due time.Time) error {
	if l.failed.Load() {
		return errDelayLine
	}
	l.q <- heldChunk{b: append([]byte(nil), b...), due: due}
	return nil
}

// close waits until every queued chunk is written (or dropped).
func (l *delayLine) close() {
	close(l.q)
	<-l.done
}
