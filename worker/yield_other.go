//go:build !linux

package worker

// yieldCore does nothing off Linux, where the yield was neither needed nor
// measured (yield_linux.go); the backlog turns still bound each round.
func yieldCore() {}
