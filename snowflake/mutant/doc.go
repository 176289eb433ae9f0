// Package mutant names the deliberately broken workers of the mutation proof
// (make integration-mutants, integration/README.md#mutation-proof). A worker
// built with -tags mutant and started with SNOWFLAKE_MUTANT=<name> breaks
// one rule of the lease protocol, so that the chaos suite can show it
// catches the break. Without the tag this package is only these names: the
// seams in each package are constant false, and nothing reads the variable.
package mutant

// Env is the environment variable a mutant build reads, once, at start.
const Env = "SNOWFLAKE_MUTANT"

// The mutants, each one broken rule.
const (
	// NoFloor: a successor ignores the reservation R the previous holder
	// left (coordinator claim): it neither waits for it nor starts above it.
	NoFloor = "nofloor"
	// NoCeiling: the generator, and the readiness verdict built on it,
	// ignore the confirmed ceiling.
	NoCeiling = "noceiling"
	// BareSet: the slot node is written without the fence (the check of the
	// lease node) and without the version check.
	BareSet = "bareset"
	// NoRelease: a stopping worker deletes its lease node without lowering
	// the stored reservation first.
	NoRelease = "norelease"
	// DupBatch: every NEXTIDS reply of two or more IDs repeats one ID.
	DupBatch = "dupbatch"
	// ClockBack: the generator (and readiness) ignore a clock step back and
	// issue at the clock's earlier time.
	ClockBack = "clockback"
)

// Names lists every mutant, in the order the proof runs them.
func Names() []string {
	return []string{NoFloor, NoCeiling, BareSet, NoRelease, DupBatch, ClockBack}
}
