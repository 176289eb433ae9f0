package client

import (
	"strings"
	"testing"
)

func TestConstLabelsAreChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		labels map[string]string
		want   string // in the error; "" for none
	}{
		{map[string]string{"client": "orders", "zone": "eu"}, ""},
		{map[string]string{"9lives": "x"}, `"9lives"`},
		{map[string]string{"__name__": "x"}, `"__name__"`},
		{map[string]string{"a-b": "x"}, `"a-b"`},
		{map[string]string{"result": "x"}, `"result"`},
		{map[string]string{"client": ""}, `"client" has an empty value`},
	} {
		cfg := DefaultConfig()
		cfg.Static, cfg.ConstLabels = []string{"127.0.0.1:1"}, tc.labels
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ConstLabels %v: %v", tc.labels, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ConstLabels %v: error %v, want one naming %s", tc.labels, err, tc.want)
		}
	}
}

// TestEndpointsGaugeIsTheWorkerSet: snowflake_client_endpoints reads the
// worker set itself, not a count kept beside it (#25 item 7).
func TestEndpointsGaugeIsTheWorkerSet(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Static = []string{"127.0.0.1:1", "127.0.0.1:2"}
	c, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := value(c.m.endpoints); got != 2 {
		t.Fatalf("snowflake_client_endpoints = %v, want 2", got)
	}
	one := (*c.eps.Load())[:1]
	c.eps.Store(&one)
	if got := value(c.m.endpoints); got != 1 {
		t.Fatalf("snowflake_client_endpoints = %v with one worker in the set, want 1", got)
	}
}
