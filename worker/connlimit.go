package worker

import (
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// limitListener caps the HTTP listeners (AdminListener, IDsListener) at a
// number of open connections, past which Accept takes no more until one
// closes (the kernel's backlog holds the rest), and at perAddr of them
// from one remote host, past which a new one from it is closed at once and
// counted in refused. With a reserve (the admin port's), Accept goes on
// past the cap into it: a reserved connection (limitConn.reserved) has
// reserveTime in all, for the probes (AdminServer answers nothing else on
// it). wrap, if set, wraps each connection accepted (IDsListener's
// idsConn).
type limitListener struct {
	net.Listener
	sem         chan struct{} // one token per open connection
	reserve     chan struct{} // one token per reserved connection; nil: none
	reserveTime time.Duration
	reserved    prometheus.Counter // connections taken into the reserve
	done        chan struct{}      // closed by Close: Accept waits no more
	closeOnce   sync.Once
	perAddr     int
	mu          sync.Mutex
	byAddr      map[string]int // open connections by remote host
	refused     prometheus.Counter
	wrap        func(net.Conn) net.Conn
}

func newLimitListener(ln net.Listener, max, perAddr int, refused prometheus.Counter) *limitListener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, max), done: make(chan struct{}),
		perAddr: min(perAddr, max), byAddr: map[string]int{}, refused: refused}
}

// token waits for a connection's token: the cap's, else the reserve's.
func (l *limitListener) token() (tok chan struct{}, err error) {
	select {
	case l.sem <- struct{}{}:
		return l.sem, nil
	default:
	}
	select {
	case l.sem <- struct{}{}:
		return l.sem, nil
	case l.reserve <- struct{}{}: // a nil reserve never takes one
		return l.reserve, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		tok, err := l.token()
		if err != nil {
			return nil, err
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-tok
			return nil, err
		}
		host := remoteHost(c)
		l.mu.Lock()
		if l.byAddr[host] >= l.perAddr {
			l.mu.Unlock()
			c.Close()
			<-tok
			l.refused.Inc()
			continue
		}
		l.byAddr[host]++
		l.mu.Unlock()
		lc := &limitConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.byAddr[host]--; l.byAddr[host] <= 0 {
				delete(l.byAddr, host)
			}
			l.mu.Unlock()
			<-tok
		}}
		if tok == l.reserve {
			l.reserved.Inc()
			lc.reserved = time.Now().Add(l.reserveTime)
			_ = c.SetDeadline(lc.reserved)
		}
		if l.wrap != nil {
			return l.wrap(lc), nil
		}
		return lc, nil
	}
}

// remoteHost is the host part of c's remote address.
func remoteHost(c net.Conn) string {
	a := c.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its token back once, on the first Close. A reserved one
// keeps its deadline: the HTTP server's own deadlines may only come sooner.
type limitConn struct {
	net.Conn
	once     sync.Once
	release  func()
	reserved time.Time // zero: not from the reserve
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// clamp is t, or the reserve's deadline when that comes first.
func (c *limitConn) clamp(t time.Time) time.Time {
	if !c.reserved.IsZero() && (t.IsZero() || t.After(c.reserved)) {
		return c.reserved
	}
	return t
}

func (c *limitConn) SetDeadline(t time.Time) error { return c.Conn.SetDeadline(c.clamp(t)) }

func (c *limitConn) SetReadDeadline(t time.Time) error { return c.Conn.SetReadDeadline(c.clamp(t)) }

func (c *limitConn) SetWriteDeadline(t time.Time) error { return c.Conn.SetWriteDeadline(c.clamp(t)) }
