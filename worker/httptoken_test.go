package worker

import (
	"net/http"
	"testing"
)

// --http-token-file: /status, /slots, /slots.json and /metrics need the
// bearer token once one is set (any of two during a rotation); the probes
// /healthz and /readyz stay open.
func TestHTTPToken(t *testing.T) {
	zk := startZK(t)
	w := startWorker(t, zk.Addr(), true, nil)
	get := func(path, token string) int {
		req, _ := http.NewRequest(http.MethodGet, w.admin.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	guarded := []string{"/status", "/slots", "/slots.json", "/metrics"}
	for _, p := range guarded {
		if code := get(p, ""); code != 200 {
			t.Fatalf("%s without a token set: %d", p, code)
		}
	}
	w.srv.SetHTTPTokens([][]byte{[]byte("old-token-0123456789"), []byte("new-token-0123456789")})
	for _, p := range guarded {
		for _, tok := range []string{"", "wrong-token-0123456789"} {
			if code := get(p, tok); code != http.StatusUnauthorized {
				t.Errorf("%s with token %q: %d, want 401", p, tok, code)
			}
		}
		for _, tok := range []string{"old-token-0123456789", "new-token-0123456789"} {
			if code := get(p, tok); code != 200 {
				t.Errorf("%s with the token %q: %d, want 200", p, tok, code)
			}
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code := get(p, ""); code == http.StatusUnauthorized {
			t.Errorf("the probe %s asks for a token", p)
		}
	}
}
