package worker

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// SetHTTPTokens puts bearer tokens in force for /status, /slots,
// /slots.json and /metrics (none: open, as before). /healthz and /readyz
// stay open: they are the probes, and say nothing but ok or the reason.
// Two tokens may be in force during a rotation, as for passwords.
func (s *Server) SetHTTPTokens(tokens [][]byte) {
	if len(tokens) == 0 {
		s.httpTokens.Store(nil)
		return
	}
	d := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		d[i] = sha256.Sum256(t)
	}
	s.httpTokens.Store(&d)
}

// bearer wraps h: with tokens in force, a request without one of them in
// "Authorization: Bearer <token>" gets 401. The compare is constant-time.
func (s *Server) bearer(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := s.httpTokens.Load()
		if d == nil {
			h.ServeHTTP(w, r)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(tok))
		match := 0
		for i := range *d {
			match |= subtle.ConstantTimeCompare(sum[:], (*d)[i][:])
		}
		if !ok || match != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="snowflaked"`)
			http.Error(w, "401 unauthorized: this path needs the bearer token of --http-token-file", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
