package worker

import (
	"net"

	"github.com/prometheus/client_golang/prometheus"
	"net/http"
	"sync"
	"time"
)

// The admin HTTP server's timeouts: every phase of a request, and the wait
// between requests on a keep-alive connection, is bounded, so that no
// client holds a connection (a file descriptor) for longer than it uses it.
const (
	adminReadHeaderTimeout = 5 * time.Second
	adminReadTimeout       = 10 * time.Second
	// adminWriteTimeout exceeds metricsTimeout, so that a slow scrape is
	// answered 503 rather than cut off.
	adminWriteTimeout = 30 * time.Second
	adminIdleTimeout  = time.Minute
	adminMaxHeader    = 16 << 10
)

// AdminServer is the admin HTTP server for h (Handler): bounded in time
// at every phase, as the RESP server is. Serve it on AdminListener's
// listener.
func (s *Server) AdminServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: adminReadHeaderTimeout,
		ReadTimeout:       adminReadTimeout,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       adminIdleTimeout,
		MaxHeaderBytes:    adminMaxHeader,
	}
}

// AdminListener caps ln at Config.HTTPMaxConns open connections: past the
// cap it accepts no more until one closes, and the kernel's backlog holds
// the rest. Without a cap, a client that opens connections and keeps them
// would exhaust the process's file descriptors, and with them the ID
// port's accepts and the ZooKeeper reconnects.
//
// One remote address holds at most Config.HTTPMaxConnsPerAddr of them: past
// that a new connection from it is closed at once (counted), so that 700
// idle connections from one host no longer keep /healthz failing past the
// liveness probe's restart point.
func (s *Server) AdminListener(ln net.Listener) net.Listener {
	return &limitListener{Listener: ln, sem: make(chan struct{}, s.cfg.HTTPMaxConns), done: make(chan struct{}),
		perAddr: s.cfg.HTTPMaxConnsPerAddr, byAddr: map[string]int{}, refused: s.m.adminRefused}
}

// limitListener is AdminListener's listener.
type limitListener struct {
	net.Listener
	sem       chan struct{} // one token per open connection
	done      chan struct{} // closed by Close: Accept waits no more
	closeOnce sync.Once
	perAddr   int
	mu        sync.Mutex
	byAddr    map[string]int // open connections by remote host
	refused   prometheus.Counter
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		select {
		case l.sem <- struct{}{}:
		case <-l.done:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.sem
			return nil, err
		}
		host := remoteHost(c)
		l.mu.Lock()
		if l.byAddr[host] >= l.perAddr {
			l.mu.Unlock()
			c.Close()
			<-l.sem
			l.refused.Inc()
			continue
		}
		l.byAddr[host]++
		l.mu.Unlock()
		return &limitConn{Conn: c, release: func() {
			l.mu.Lock()
			if l.byAddr[host]--; l.byAddr[host] <= 0 {
				delete(l.byAddr, host)
			}
			l.mu.Unlock()
			<-l.sem
		}}, nil
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

// limitConn gives its token back once, on the first Close.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
