package worker

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestConnectionMetricsReadTheAtomics: snowflake_worker_connections and
// connections_total are the counts Status reports, not a second count
// beside them (#25 item 7).
func TestConnectionMetricsReadTheAtomics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s, err := New(DefaultConfig(), newFakeLease(t), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	s.open.Store(3)
	s.accepted.Store(9)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		switch m := f.GetMetric()[0]; f.GetName() {
		case "snowflake_worker_connections":
			got[f.GetName()] = m.GetGauge().GetValue()
		case "snowflake_worker_connections_total":
			got[f.GetName()] = m.GetCounter().GetValue()
		}
	}
	st := s.Status()
	if got["snowflake_worker_connections"] != 3 || got["snowflake_worker_connections_total"] != 9 ||
		st.Connections != 3 || st.ConnectionsTotal != 9 {
		t.Fatalf("metrics %v, Status connections %d total %d; want 3 and 9 in both", got, st.Connections, st.ConnectionsTotal)
	}
}
