package worker

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/worker/resp"
)

// AUTH works as Redis's requirepass: with passwords set, a connection is
// refused every command but AUTH, HELLO … AUTH and QUIT until it
// authenticates; without, AUTH accepts anything, as Redis does with its
// password-less default user. Two passwords may be in force at once, so a
// rotation accepts the old and the new until every client has the new.
// A rotation that drops a password closes the connections authenticated
// with it, as Redis closes the clients of an ACL user it deletes: a
// password taken out of the file stops working everywhere, not only for
// new connections.

const (
	replyNoAuth    = "NOAUTH Authentication required."
	replyWrongPass = "WRONGPASS invalid username-password pair or user is disabled."
	replyHelloAuth = "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"
	// defaultUser is Redis's one user name; AUTH default <pw> is AUTH <pw>.
	defaultUser = "default"
)

// MaxWrongPasswords is how many wrong passwords one connection may send:
// the reply to the last is followed by a close. Without it one connection
// tried 1.7 million passwords a second; a guesser now pays a connection
// (and a slot of --max-conns) per three.
const MaxWrongPasswords = 3

// auth is the server's password state.
type auth struct {
	// mu orders a connection's authentication (the check and the record
	// of the password it used, conn.pass) against SetPasswords: an AUTH
	// racing a rotation is either checked against the new passwords or
	// recorded in time for the rotation to find it.
	mu sync.Mutex
	// digests are the SHA-256 of the passwords in force; nil: none set.
	// Comparing digests keeps the compare constant-time in the length too.
	// Written under mu; read without it on every request (required).
	digests atomic.Pointer[[][sha256.Size]byte]
	// none is what conn.pass points to for a connection that connected
	// while no password was set: in no set of passwords.
	none     [sha256.Size]byte
	failures prometheus.Counter
	// lockouts counts connections closed after MaxWrongPasswords.
	lockouts prometheus.Counter
	// revoked counts connections closed by a rotation (SetPasswords).
	revoked prometheus.Counter
}

func newAuth(reg prometheus.Registerer) (*auth, error) {
	a := &auth{
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_auth_failures_total",
			Help: "AUTH and HELLO AUTH attempts refused with WRONGPASS (a wrong password, or a user other than default), and wrong bearer passwords on IDs over HTTP (401).",
		}),
		lockouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_auth_lockouts_total",
			Help: "Connections closed after sending MaxWrongPasswords (3) wrong passwords (AUTH, or bearer passwords over HTTP).",
		}),
		revoked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "snowflake_worker_auth_revoked_total",
			Help: "Connections closed by a password rotation (SIGHUP) because the password they authenticated with is no longer in force.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{a.failures, a.lockouts, a.revoked} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("register auth metrics: %w", err)
			}
		}
	}
	return a, nil
}

// SetPasswords puts pws in force (none: AUTH accepts anything, and new
// connections need none) and closes every connection authenticated with a
// password not among them, or connected while none was set; it returns
// how many it closed.
func (s *Server) SetPasswords(pws [][]byte) int {
	var d *[][sha256.Size]byte
	if len(pws) > 0 {
		ds := make([][sha256.Size]byte, len(pws))
		for i, p := range pws {
			ds[i] = sha256.Sum256(p)
		}
		d = &ds
	}
	a := s.auth
	a.mu.Lock()
	a.digests.Store(d)
	var drop []*conn
	if d != nil {
		s.mu.Lock()
		for c := range s.conns {
			// One closed by an earlier rotation may not have left the
			// set yet: not counted twice.
			if c.pass != nil && !c.revoked.Load() && !inForce(*d, c.pass) {
				drop = append(drop, c)
			}
		}
		s.mu.Unlock()
	}
	a.mu.Unlock()
	s.revoke(drop)
	a.revoked.Add(float64(len(drop)))
	return len(drop)
}

// inForce reports whether digest is one of d.
func inForce(d [][sha256.Size]byte, digest *[sha256.Size]byte) bool {
	for i := range d {
		if d[i] == *digest {
			return true
		}
	}
	return false
}

// required reports whether passwords are in force.
func (a *auth) required() bool { return a.digests.Load() != nil }

// check compares pw with every password in force, in constant time, and
// counts a failure; on success it records the password c authenticated
// with (conn.pass), for a rotation to find.
func (a *auth) check(c *conn, user, pw []byte) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	digest, ok := a.match(user, pw)
	if ok {
		c.pass = digest
	}
	return ok
}

// checkRequest is check for a request that stands alone (IDs over HTTP):
// nothing outlives it, so nothing is recorded for a rotation.
func (a *auth) checkRequest(pw []byte) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.match(nil, pw)
	return ok
}

// match is check's comparison, under a.mu: the digest pw matched, or the
// none digest when no password is in force.
func (a *auth) match(user, pw []byte) (*[sha256.Size]byte, bool) {
	sum := sha256.Sum256(pw)
	d := a.digests.Load()
	if d == nil {
		return &a.none, true
	}
	ok, match := 0, 0
	for i := range *d {
		eq := subtle.ConstantTimeCompare(sum[:], (*d)[i][:])
		ok |= eq
		match = subtle.ConstantTimeSelect(eq, i, match)
	}
	if user != nil && string(user) != defaultUser {
		ok = 0
	}
	if ok != 1 {
		a.failures.Inc()
		return nil, false
	}
	return &(*d)[match], true
}

// open reports whether no password is in force, and then records that c
// connected so: a rotation that sets passwords closes it.
func (a *auth) open(c *conn) bool {
	if a.required() {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.digests.Load() != nil {
		return false // set meanwhile
	}
	c.pass = &a.none
	return true
}

// gate answers -NOAUTH for a command an unauthenticated connection may
// not send; false: the command may run.
func (c *conn) gate(k cmdKind) bool {
	a := c.s.auth
	if a.open(c) {
		c.authed = true // until a password is set, a connection needs none
		return false
	}
	if c.s.cmds[k].noAuth {
		return false
	}
	c.wbuf = resp.AppendError(c.wbuf, replyNoAuth)
	return true
}

// auth is AUTH [user] password.
func (c *conn) auth(args [][]byte) result {
	var user, pw []byte
	switch len(args) {
	case 2:
		pw = args[1]
	case 3:
		user, pw = args[1], args[2]
	default:
		c.wrongArgs("auth")
		return resError
	}
	if !c.s.auth.required() {
		if user == nil {
			c.wbuf = resp.AppendError(c.wbuf, "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
			return resError
		}
		c.wbuf = resp.AppendSimple(c.wbuf, "OK")
		return resOK
	}
	if !c.s.auth.check(c, user, pw) {
		c.wbuf = resp.AppendError(c.wbuf, replyWrongPass)
		c.wrongPassword()
		return resError
	}
	c.authed = true
	c.wbuf = resp.AppendSimple(c.wbuf, "OK")
	return resOK
}

// wrongPassword counts a WRONGPASS on the connection and, at
// MaxWrongPasswords, has it closed after the reply.
func (c *conn) wrongPassword() {
	if c.wrongPasswords++; c.wrongPasswords >= MaxWrongPasswords && !c.closeAfter {
		c.closeAfter = true
		c.s.auth.lockouts.Inc()
	}
}

// helloAuth checks HELLO's AUTH option (user, pw; nil when not given) and
// answers the refusal; true: HELLO may go on.
func (c *conn) helloAuth(user, pw []byte) bool {
	if !c.s.auth.required() {
		return true // any credentials are accepted, as Redis does without a password
	}
	if pw == nil {
		if c.authed {
			return true
		}
		c.wbuf = resp.AppendError(c.wbuf, replyHelloAuth)
		return false
	}
	if !c.s.auth.check(c, user, pw) {
		c.wbuf = resp.AppendError(c.wbuf, replyWrongPass)
		c.wrongPassword()
		return false
	}
	c.authed = true
	return true
}
