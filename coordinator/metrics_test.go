package coordinator

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsReadTheAtomics: the counts Status reports and the metrics
// exported are one state (#25 item 7): moving the atomic moves the metric,
// and the losses Status reports are the losses counter's sum over reasons.
// The types stay what dashboards and rules expect: counters stay counters.
func TestMetricsReadTheAtomics(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, err := New(testConfig("127.0.0.1:1"), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	c.claims.Store(5)
	c.creates.Store(7)
	c.lists.Store(11)
	c.skewMs.Store(-1500)
	c.m.losses.WithLabelValues("expired").Add(2)
	c.m.losses.WithLabelValues("taken").Inc()

	st := c.Status()
	for _, m := range []struct {
		name string
		want int64
	}{
		{"snowflake_coordinator_claims_total", st.Claims},
		{"snowflake_coordinator_lease_creates_total", st.Creates},
		{"snowflake_coordinator_lease_lists_total", c.lists.Load()},
	} {
		if got := counterValue(t, reg, m.name, "", ""); got != float64(m.want) || m.want == 0 {
			t.Errorf("%s = %v, want %d (the atomic's)", m.name, got, m.want)
		}
	}
	if got := gaugeValue(t, reg, "snowflake_coordinator_clock_skew_seconds"); got != -1.5 || st.SkewMs != -1500 {
		t.Errorf("clock_skew_seconds = %v, Status skew_ms %d; want -1.5 and -1500", got, st.SkewMs)
	}
	if st.Losses != 3 {
		t.Errorf("Status losses = %d, want 3 (2 expired + 1 taken)", st.Losses)
	}
	if got := counterValue(t, reg, "snowflake_coordinator_lease_losses_total", "reason", "expired"); got != 2 {
		t.Errorf("lease_losses_total{reason=expired} = %v, want 2", got)
	}
}
