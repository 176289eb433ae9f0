//go:build mutant

package mutant

import "testing"

// In the mutant build exactly the named mutant fires, and a name that is
// no mutant is refused rather than run as a correct worker.
func TestOneMutantAtATime(t *testing.T) {
	saved := active
	t.Cleanup(func() { active = saved })
	for _, n := range Names() {
		active = n
		for _, m := range Names() {
			if Is(m) != (m == n) {
				t.Errorf("%s=%s: Is(%q) = %v", Env, n, m, Is(m))
			}
		}
		if a, err := Active(); a != n || err != nil {
			t.Errorf("%s=%s: Active() = %q, %v", Env, n, a, err)
		}
	}
	active = "nofloors"
	if _, err := Active(); err == nil {
		t.Errorf("%s=%s (a typo) accepted", Env, active)
	}
	active = ""
	if a, err := Active(); a != "" || err != nil {
		t.Errorf("unset: Active() = %q, %v", a, err)
	}
}
