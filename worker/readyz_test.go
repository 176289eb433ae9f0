package worker

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator"
)

// verdictLease is a fakeLease whose verdict is set by the test.
type verdictLease struct {
	*fakeLease
	reason coordinator.Reason
}

func (v *verdictLease) Ready() bool { return v.reason == coordinator.ReasonNone }

func (v *verdictLease) Readiness() coordinator.Readiness {
	r := v.fakeLease.Readiness()
	r.Reason, r.NowMs, r.SkewMs = v.reason, 1_700_000_000_123, 1234
	return r
}

// TestReadyzSaysTheReason: /readyz's first word is the coordinator's reason
// (the one a runbook matches on: ready, no_lease, ceiling_passed,
// clock_back, skew), 200 only for ready, and a lease's figures follow. Every
// reason the coordinator names is tried, so a new one is covered too.
func TestReadyzSaysTheReason(t *testing.T) {
	lease := &verdictLease{fakeLease: newFakeLease(t)}
	w := serve(t, lease, prometheus.NewRegistry(), nil, nil)
	get := func() (int, string) {
		t.Helper()
		resp, err := http.Get(w.admin.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tried := 0
	for r := coordinator.ReasonNone; r.String() != "unknown"; r++ {
		tried++
		lease.reason = r
		code, body := get()
		want := http.StatusServiceUnavailable
		if r == coordinator.ReasonNone {
			want = http.StatusOK
		}
		if code != want || strings.Fields(body)[0] != r.String() {
			t.Errorf("reason %s: /readyz = %d %q, want %d and %q first", r, code, body, want, r.String())
		}
		if !r.Leaseless() {
			for _, fig := range []string{"slot dc07-m11", "now_ms 1700000000123", "ceiling_ms ", "last_issued_ms ", "skew_ms 1234"} {
				if !strings.Contains(body, fig) {
					t.Errorf("reason %s: /readyz %q lacks %q", r, body, fig)
				}
			}
		}
	}
	if tried < 5 {
		t.Fatalf("tried %d reasons: the coordinator names ready, no_lease, ceiling_passed, clock_back and skew", tried)
	}
	lease.reason = coordinator.ReasonNone
	w.srv.BeginShutdown()
	if code, body := get(); code != http.StatusServiceUnavailable || strings.Fields(body)[0] != "shutting_down" {
		t.Errorf("after BeginShutdown: /readyz = %d %q, want 503 shutting_down", code, body)
	}
}
