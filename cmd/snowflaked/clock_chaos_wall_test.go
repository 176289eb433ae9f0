//go:build chaos && !go1.25

package main

import "testing"

// Before Go 1.25 there is no testing/synctest: the test waits on the wall
// clock.
func TestChaosClockFollowsItsFile(t *testing.T) { chaosClockFollowsItsFile(t) }
