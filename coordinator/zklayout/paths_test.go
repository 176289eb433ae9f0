package zklayout

import "testing"

func TestValidRoot(t *testing.T) {
	t.Parallel()
	for root, want := range map[string]bool{
		"/snowflake": true, "/fleets/a": true, "/": false, "": false,
		"snowflake": false, "/snowflake/": false,
	} {
		if got := ValidRoot(root); got != want {
			t.Errorf("ValidRoot(%q) = %v, want %v", root, got, want)
		}
	}
}
