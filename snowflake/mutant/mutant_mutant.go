//go:build mutant

package mutant

import (
	"fmt"
	"os"
	"slices"
)

// active is SNOWFLAKE_MUTANT as the process started with it. A global, in
// the mutant build only: the seams are on hot paths.
var active = os.Getenv(Env)

// Is reports whether the running mutant is name.
func Is(name string) bool { return active == name }

// Active is the running mutant, "" for none; an error for a name that is
// not a mutant, so that a typo cannot pass for a proof.
func Active() (string, error) {
	if active != "" && !slices.Contains(Names(), active) {
		return "", fmt.Errorf("%s=%q: not a mutant (want one of %v)", Env, active, Names())
	}
	return active, nil
}
