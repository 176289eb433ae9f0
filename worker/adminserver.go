package worker

import (
	"context"
	"net"
	"net/http"
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
	// adminReserve is how many connections AdminListener takes past
	// HTTPMaxConns, for the probes: each answers /healthz or /readyz (any
	// other path 503) and is closed, within adminReserveTime in all.
	adminReserve     = 8
	adminReserveTime = 2 * time.Second
)

// AdminServer is the admin HTTP server for h (Handler): bounded in time
// at every phase, as the RESP server is. Serve it on AdminListener's
// listener: on a connection from its reserve, only the probes are
// answered.
func (s *Server) AdminServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           probesOnReserve(h),
		ConnContext:       reserveContext,
		ReadHeaderTimeout: adminReadHeaderTimeout,
		ReadTimeout:       adminReadTimeout,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       adminIdleTimeout,
		MaxHeaderBytes:    adminMaxHeader,
	}
}

// AdminListener caps ln at Config.HTTPMaxConns open connections: past
// the cap, new ones go to a reserve of adminReserve for the probes, and
// past that they wait in the kernel's backlog until one closes. Without a
// cap, a client that opens connections and keeps them would exhaust the
// process's file descriptors, and with them the ID port's accepts and the
// ZooKeeper reconnects.
//
// One remote address holds at most Config.HTTPMaxConnsPerAddr of them,
// the reserve's included: past that a new connection from it is closed at
// once (counted), so that 700 idle connections from one host no longer
// keep /healthz failing past the liveness probe's restart point. The
// reserve is for the cap filled from many addresses (8 x 32 keep-alive
// connections filled 256): kubelet's next probe still gets its answer.
func (s *Server) AdminListener(ln net.Listener) net.Listener {
	l := newLimitListener(ln, s.cfg.HTTPMaxConns, s.cfg.HTTPMaxConnsPerAddr, s.m.adminRefused)
	l.reserve, l.reserveTime, l.reserved = make(chan struct{}, adminReserve), adminReserveTime, s.m.adminReserved
	return l
}

// reservedKey marks, in a request's context, a connection from the
// admin port's reserve.
type reservedKey struct{}

// reserveContext is AdminServer's ConnContext: it marks the connections
// AdminListener took into its reserve (under TLS, the tls.Conn's).
func reserveContext(ctx context.Context, c net.Conn) context.Context {
	for {
		if lc, ok := c.(*limitConn); ok {
			if !lc.reserved.IsZero() {
				return context.WithValue(ctx, reservedKey{}, true)
			}
			return ctx
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return ctx
		}
		c = u.NetConn()
	}
}

// probesOnReserve wraps h: on a reserved connection it answers GET
// /healthz and /readyz and nothing else (503 saying why), and closes the
// connection after the answer.
func probesOnReserve(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Context().Value(reservedKey{}) == nil {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "503 the admin port's --http-max-conns connections are all open: "+
				"this connection is from the probes' reserve, which answers /healthz and /readyz only", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	})
}
