//go:build race

package fleettest

// raceEnabled builds the workers with the race detector too, so a test run
// with -race checks the daemon as well.
const raceEnabled = true
