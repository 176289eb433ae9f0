//go:build chaos && go1.25

package main

import (
	"testing"
	"testing/synctest"
)

// In a synctest bubble time.Now and time.Sleep are the bubble's fake clock,
// which both the chaos clock (its 100 ms between reads of the file) and the
// test's waits read: the same steps and the same 2 s bounds, checked
// against the clock the code sees, without the wall time they took.
func TestChaosClockFollowsItsFile(t *testing.T) {
	synctest.Test(t, chaosClockFollowsItsFile)
}
