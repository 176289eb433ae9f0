// Package faultproxy is the tests' TCP fault proxy, in front of one server:
// Blackhole silences it both ways without closing anything (a network that
// drops packets), SetDelay and SetRequestDelay make it slow (ZooKeeper slow
// rather than down), Reset closes every connection at once. The ZooKeeper
// tests put it between a client and integration/zktest's server; the chaos
// suite between a worker container and an ensemble server's published port
// (the kernel there has no netem). Only a test binary may use it.
package faultproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// Proxy forwards every connection to its target. Blackhole stops delivering
// bytes both ways without closing anything: the client sees silence, its
// session times out on the server, and nothing it sent reaches the server
// until Heal. Bytes held during the blackhole are delivered after Heal, as
// TCP retransmission would. SetDelay makes the server slow instead: each
// answer reaches the client that much late; SetRequestDelay does the same
// to what the client sends.
type Proxy struct {
	target       func() (string, error)
	ln           net.Listener
	answerDelay  atomic.Int64 // ns each chunk from the server is held
	requestDelay atomic.Int64 // ns each chunk from the client is held

	mu      sync.Mutex
	open    chan struct{} // closed while traffic flows
	conns   map[net.Conn]struct{}
	closed  bool
	closing chan struct{}
	wg      sync.WaitGroup
}

// New listens on a free loopback port and forwards to target. It is
// closed when the test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := Listen("127.0.0.1:0", func() (string, error) { return target, nil })
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// Listen listens on addr (port 0: a free one) and dials target() for each
// connection, so that a target whose address changes (a restarted
// container's new published port) is followed; a connection whose target
// cannot be had or dialled is closed. The caller closes the proxy.
func Listen(addr string, target func() (string, error)) (*Proxy, error) {
	testenv.TestOnly("faultproxy")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &Proxy{target: target, ln: ln, open: make(chan struct{}),
		conns: map[net.Conn]struct{}{}, closing: make(chan struct{})}
	close(p.open)
	p.wg.Add(1)
	go p.accept()
	return p, nil
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
func (p *Proxy) SetDelay(d time.Duration) { p.answerDelay.Store(int64(d)) }

// SetRequestDelay is SetDelay for what the client sends: each chunk reaches
// the server d late. Both together make a slow network, d each way.
func (p *Proxy) SetRequestDelay(d time.Duration) { p.requestDelay.Store(int64(d)) }

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
	addr, err := p.target()
	if err != nil {
		return
	}
	server, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	p.wg.Add(2)
	go p.pipe(server, client, &p.requestDelay, done)
	go p.pipe(client, server, &p.answerDelay, done)
	<-done
}

// pipe copies src to dst, holding each chunk while blackholed, and until
// *delay after it was read. An end of stream is held too, then passed on as
// a close.
func (p *Proxy) pipe(dst, src net.Conn, delay *atomic.Int64, done chan<- struct{}) {
	defer p.wg.Done()
	defer func() { done <- struct{}{} }()
	line := newDelayLine(dst, p.closing)
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		read := time.Now()
		if !p.wait() {
			line.close()
			return
		}
		if n > 0 {
			if werr := line.write(buf[:n], read.Add(time.Duration(delay.Load()))); werr != nil {
				line.close()
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				src.Close()
			}
			line.close() // what is held goes first
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

var errDelayLine = errors.New("faultproxy: delay line: write failed")

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
