//go:build !mutant

package mutant

// Is is constant false without -tags mutant: every branch it guards is dead
// code the compiler removes, and SNOWFLAKE_MUTANT is never read.
func Is(string) bool { return false }

// Active is "" without -tags mutant.
func Active() (string, error) { return "", nil }
