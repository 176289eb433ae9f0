//go:build !mutant

package mutant

import "testing"

// Without -tags mutant no seam may fire, whatever the environment says.
func TestInertWithoutTag(t *testing.T) {
	for _, n := range Names() {
		t.Setenv(Env, n)
		if Is(n) {
			t.Errorf("Is(%q) with %s=%s in a build without -tags mutant", n, Env, n)
		}
		if a, err := Active(); a != "" || err != nil {
			t.Errorf("Active() = %q, %v without -tags mutant", a, err)
		}
	}
}
