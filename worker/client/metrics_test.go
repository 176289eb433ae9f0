package client

import (
	"strings"
	"testing"
)

func TestConstLabelsAreChecked(t *testing.T) {
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
