package worker

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/snowfleet/snowfleet/snowflake"
)

// IDs over HTTP (--http-ids), for callers with an HTTP client and no Redis
// one: GET /id and GET /ids?count=N, behind the RESP port's gates (the
// lease's readiness, protected mode, the password and its lockout,
// MaxConns, a cap per address and the timeouts) and counted in its
// metrics as NEXTID and NEXTIDS.

// idsMaxHeader is IDsServer's MaxHeaderBytes: net/http reads that plus
// 4,096 bytes before it answers 431, so a request's head may be
// AuthMaxFrame bytes, the most an unauthenticated RESP request may be. A
// request for IDs carries nothing else: one with a body is refused.
const idsMaxHeader = AuthMaxFrame - 4096

// IDsServer is the HTTP server of IDsHandler, bounded in time as the RESP
// server is: ReadTimeout for a request to arrive, WriteTimeout for its
// answer, IdleTimeout between requests (ReadTimeout until the connection
// sent the password, when one is set: idsConn). HTTP/1.1 only, so that a
// connection is one request at a time, as a RESP one is one queue. Serve
// it on IDsListener's listener.
func (s *Server) IDsServer() *http.Server {
	return &http.Server{
		Handler:           s.IDsHandler(),
		ConnContext:       idsConnContext,
		ReadHeaderTimeout: s.cfg.ReadTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    idsMaxHeader,
		// Not nil: no HTTP/2 under TLS (go.mod's Go predates Protocols).
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
}

// IDsListener caps ln at Config.MaxConns open connections, the RESP
// port's cap (past it new ones wait in the kernel's backlog), and at
// Config.HTTPIDsMaxConnsPerAddr from one remote address: past that a new
// connection from it is closed at once (counted), so that one host cannot
// hold them all and keep out the clients with the password.
func (s *Server) IDsListener(ln net.Listener) net.Listener {
	if err := tuneListener(ln, s.cfg.ClientOutputLimit); err != nil {
		s.log.Warn("cannot set the socket buffers of IDs over HTTP; the system's defaults stay", "error", err)
	}
	l := newLimitListener(ln, s.cfg.MaxConns, s.cfg.HTTPIDsMaxConnsPerAddr, s.m.idsRefused)
	l.wrap = func(c net.Conn) net.Conn { return &idsConn{Conn: c, s: s} }
	return l
}

// httpDenied is protected mode's refusal over HTTP (403), replyDenied's
// counterpart.
const httpDenied = "snowflaked is running in protected mode because protected mode is enabled and no password is set. " +
	"In this mode IDs over HTTP are only served to the loopback interface (and, with --http-ids-tls, to clients with a verified certificate). " +
	"To serve other hosts, do one of the following: " +
	"1) set a password: start snowflaked with --requirepass-file FILE and have clients send Authorization: Bearer <password>; " +
	"2) use mutual TLS: --http-ids-tls with --tls-auth-clients yes, and give clients certificates; " +
	"3) if nothing untrusted can reach this port (a private network, a NetworkPolicy), disable protected mode with --protected-mode no (SNOWFLAKE_PROTECTED_MODE=no) and restart."

// IDsHandler serves GET /id and GET /ids?count=N (1..4096). The IDs are
// JSON strings by default ({"id":"…"}, {"ids":["…",…]}), since a JSON
// number holds 53 bits in most parsers; format=integer makes them numbers,
// format=short the short form. Accept: text/plain answers one ID per line.
// Without a lease it answers 503 with Retry-After and Connection: close,
// so that a balancer moves the next request to another worker.
func (s *Server) IDsHandler() http.Handler {
	nextID, nextIDs := s.cmds.lookup([]byte("nextid")), s.cmds.lookup([]byte("nextids"))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var k cmdKind
		switch r.URL.Path {
		case "/id":
			k = nextID
		case "/ids":
			k = nextIDs
		default:
			httpError(w, http.StatusNotFound, "no such path "+strconv.Quote(r.URL.Path)+": GET /id or /ids?count=N")
			return
		}
		res := s.serveIDs(w, r, k == nextIDs)
		s.m.requests[k][res].Inc()
	})
}

func (s *Server) serveIDs(w http.ResponseWriter, r *http.Request, many bool) result {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		httpError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed: GET")
		return resError
	}
	if s.protectedDeniesRequest(r) {
		s.m.denied.Inc()
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusForbidden, httpDenied)
		return resError
	}
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		httpError(w, http.StatusRequestEntityTooLarge, "a request for IDs has no body: GET /id or /ids?count=N, nothing after the header")
		return resError
	}
	if !s.authorized(w, r) {
		return resError
	}
	q := r.URL.Query()
	n := 1
	if many {
		c := q.Get("count")
		v, err := strconv.Atoi(c)
		if err != nil || v < 1 || v > snowflake.MaxBatch {
			httpError(w, http.StatusBadRequest, "count must be an integer in 1..4096, got "+strconv.Quote(c))
			return resError
		}
		n = v
	}
	form := formString
	if f := q.Get("format"); f != "" {
		var ok bool
		if form, ok = parseIDForm([]byte(f)); !ok {
			httpError(w, http.StatusBadRequest, "format must be string, integer or short, got "+strconv.Quote(f))
			return resError
		}
	}
	g := s.lease.Generator()
	if s.Draining() || !s.lease.Ready() || g == nil {
		return unavailable(w, "this worker holds no ready lease (state "+s.lease.Readiness().State+"); try another worker", resNoLease)
	}
	// The RESP connections' rule (fairids.go): a heavy request gives way
	// while light ones wait, here as on the loops.
	first, err := s.fair.nextWaiting(&s.idsConnOf(r).share, g, n)
	if err != nil {
		if errors.Is(err, snowflake.ErrClockRollback) {
			return unavailable(w, err.Error()+"; try another worker", resClockBack)
		}
		return unavailable(w, err.Error()+"; try another worker", resNoLease)
	}
	s.m.ids.Add(float64(n))
	s.writeIDs(w, r, first, n, many, form)
	return resOK
}

// authorized checks r's password (Authorization: Bearer) when one is
// set, and answers 401 when it is missing or wrong; the answer to the
// connection's MaxWrongPasswords-th wrong one closes it, as AUTH's does.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if !s.auth.required() {
		return true
	}
	c := s.idsConnOf(r)
	if pw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && s.auth.checkRequest([]byte(pw)) {
		c.authed.Store(true)
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="snowflaked"`)
	msg := "a password is required: Authorization: Bearer <password>"
	if len(r.Header["Authorization"]) > 0 {
		msg = "wrong password in Authorization: Bearer <password>"
		if c.wrongPassword() {
			w.Header().Set("Connection", "close")
			msg += "; " + strconv.Itoa(MaxWrongPasswords) + " wrong passwords on this connection: it is closed"
		}
	}
	httpError(w, http.StatusUnauthorized, msg)
	return false
}

// unavailable is the refusal: 503, and the connection closed after it, so
// that a balancer's next attempt goes to another worker.
func unavailable(w http.ResponseWriter, msg string, res result) result {
	w.Header().Set("Retry-After", "1")
	w.Header().Set("Connection", "close")
	httpError(w, http.StatusServiceUnavailable, msg)
	return res
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg}) // json, not strconv.Quote: a client's bytes in msg must come out as valid JSON
	w.Write(append(b, '\n'))
}

func appendIDText(b []byte, id int64, short bool) []byte {
	if short {
		return snowflake.AppendShort(b, id)
	}
	return strconv.AppendInt(b, id, 10)
}
