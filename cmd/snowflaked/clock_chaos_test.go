//go:build chaos

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The chaos clock follows its file: the integration suite moves a worker's
// clock by `docker cp`-ing a new offset into it. TestChaosClockFollowsItsFile
// runs this on fake time where the toolchain has testing/synctest
// (clock_chaos_synctest_test.go), on the wall clock where it has not.
func chaosClockFollowsItsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "clock")
	t.Setenv(chaosFileEnv, file)
	t.Setenv(chaosOffsetEnv, "-1h")
	c, err := newClock(hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	offset := func() time.Duration { return time.Duration(c.UnixNano() - time.Now().UnixNano()) }
	near := func(got, want time.Duration) bool { return got > want-time.Second && got < want+time.Second }
	if got := offset(); !near(got, -time.Hour) {
		t.Fatalf("start offset %v, want -1h from %s", got, chaosOffsetEnv)
	}
	wait := func(want time.Duration) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for !near(offset(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("offset %v, want %v within 2s of writing the file", offset(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("-3m\n")
	wait(-3 * time.Minute)
	write("garbage")
	time.Sleep(3 * chaosReadPeriod)
	if got := offset(); !near(got, -3*time.Minute) {
		t.Errorf("after an unparsable file the offset is %v, want the last good -3m", got)
	}
	write("2m")
	wait(2 * time.Minute)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	wait(-time.Hour) // no file: back to the start offset
}

func TestChaosClockRejectsABadStartOffset(t *testing.T) {
	t.Setenv(chaosOffsetEnv, "three seconds")
	if _, err := newClock(hclog.NewNullLogger()); err == nil {
		t.Fatal("want an error naming SNOWFLAKE_CHAOS_CLOCK_OFFSET")
	}
}
