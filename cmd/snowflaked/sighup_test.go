package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// SIGHUP without --requirepass-file is logged and ignored: its default
// action killed the worker with no drain and no release.
func TestSIGHUPWithoutPasswordFile(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	d := startDaemon(t, bin, nil, "--zk", zks.Addr(), "--zk-root", "/sighup", "--session-timeout", "4s", "--horizon", "2s")
	d.waitReady(20 * time.Second)
	for range 3 {
		if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	select {
	case <-d.exited:
		t.Fatalf("snowflaked exited on SIGHUP: %v\n%s", d.err, d.out.String())
	default:
	}
	if out := d.cli("NEXTID"); strings.HasPrefix(out, "-") || out == "" {
		t.Fatalf("NEXTID after SIGHUP: %q", out)
	}
	if !strings.Contains(d.out.String(), "SIGHUP: nothing to re-read") {
		t.Errorf("no log of the ignored SIGHUP:\n%s", d.out.String())
	}
}
