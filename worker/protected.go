package worker

import (
	"crypto/tls"
	"net"
)

// Protected mode works as Redis's protected-mode (on by default there and
// here): a worker with no password serves only clients on its own host, so
// that one started without --requirepass-file on a reachable address does
// not hand out IDs to anyone who finds it. A client from elsewhere gets
// Redis's -DENIED error saying how to fix it, then a close. Unlike Redis, a
// TLS client that presented a verified certificate is served: mutual TLS
// authenticates it as a password would.

// replyDenied is the -DENIED error (without its "-" and CRLF).
const replyDenied = "DENIED snowflaked is running in protected mode because protected mode is enabled and no password is set. " +
	"In this mode connections are only accepted from the loopback interface (and, on the TLS port, from clients with a verified certificate). " +
	"To serve other hosts, do one of the following: " +
	"1) set a password: start snowflaked with --requirepass-file FILE and have clients AUTH with it; " +
	"2) use mutual TLS: --tls-listen with --tls-auth-clients yes, and give clients certificates; " +
	"3) if nothing untrusted can reach this port (a private network, a NetworkPolicy), disable protected mode with --protected-mode no (SNOWFLAKE_PROTECTED_MODE=no) and restart. " +
	"You only need to do one of the above for the worker to accept connections from other hosts."

// protectedDenies reports whether protected mode refuses nc: it is on, no
// password is set, nc comes from an address other than loopback, and did
// not present a verified client certificate (a TLS connection is asked
// after its handshake).
func (s *Server) protectedDenies(nc net.Conn) bool {
	if !s.cfg.ProtectedMode || s.auth.required() || isLoopback(nc.RemoteAddr()) {
		return false
	}
	if tc, ok := nc.(*tls.Conn); ok && len(tc.ConnectionState().VerifiedChains) > 0 {
		return false
	}
	return true
}

// isLoopback reports whether a is on the loopback interface (127.0.0.0/8,
// ::1, an IPv4-mapped 127.x), as Redis's connIsLocal.
func isLoopback(a net.Addr) bool {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.IsLoopback()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
