package main

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// TestShutdownDelay runs the binary with --shutdown-delay: after SIGTERM
// /readyz is 503 at once while NEXTID still answers with IDs, and the
// process drains and releases only after the delay; a second signal cuts
// the delay short.
func TestShutdownDelay(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	const delay = 2 * time.Second
	common := []string{"--zk", zks.Addr(), "--zk-root", "/shutdown-delay-test",
		"--session-timeout", "4s", "--renew", "200ms", "--horizon", "2s"}

	d := startDaemon(t, bin, nil, append(common, "--shutdown-delay", delay.String())...)
	d.waitReady(15 * time.Second)
	if st, info := d.status(), d.cli("INFO"); !st.Ready || !st.Serving || !hasLines(info, "ready:1", "serving:1") {
		t.Fatalf("ready before SIGTERM: /status ready %v serving %v, INFO %q; want both 1", st.Ready, st.Serving, info)
	}
	before, err := strconv.ParseInt(d.cli("NEXTID"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	signalled := time.Now()
	for {
		code, body := d.get("/readyz")
		if code == 503 {
			if !strings.Contains(body, "shutting down") {
				t.Fatalf("/readyz after SIGTERM = %d %q", code, body)
			}
			break
		}
		if time.Since(signalled) > delay {
			t.Fatalf("/readyz still %d %q %v after SIGTERM", code, body, delay)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Not ready, yet still serving: a client the balancer has not dropped yet
	// gets IDs, new connections included (redis-cli opens one per call).
	served := 0
	for i := 0; i < 3; i++ {
		out := d.cli("NEXTID")
		id, err := strconv.ParseInt(out, 10, 64)
		if err != nil || id <= before {
			t.Fatalf("NEXTID %d during the shutdown delay = %q (after %d)", i, out, before)
		}
		before, served = id, served+1
	}
	if code, _ := d.get("/readyz"); code != 503 {
		t.Fatalf("/readyz back to %d during the delay", code)
	}
	// /status and INFO say ready as /readyz does, and serving as NEXTID does.
	if st, info := d.status(), d.cli("INFO"); st.Ready || !st.Serving || !hasLines(info, "ready:0", "serving:1") {
		t.Fatalf("during the delay: /status ready %v serving %v, INFO %q; want ready 0, serving 1", st.Ready, st.Serving, info)
	}
	select {
	case <-d.exited:
		t.Fatalf("exited %v after SIGTERM, before the %v delay", time.Since(signalled), delay)
	default:
	}
	if code := d.waitExit(15 * time.Second); code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	if took := time.Since(signalled); took < delay {
		t.Fatalf("exited %v after SIGTERM, under the %v delay", took, delay)
	}
	log := d.out.String()
	i := strings.Index(log, "still serving ids for the shutdown delay")
	j := strings.Index(log, "connections drained")
	k := strings.Index(log, "released slot")
	if i < 0 || j < i || k < j {
		t.Fatalf("log does not show delay, drain, release in order (%d %d %d):\n%s", i, j, k, log)
	}
	t.Logf("served %d IDs while not ready; exit %v after SIGTERM", served, time.Since(signalled).Round(time.Millisecond))

	t.Run("second signal cuts it short", func(t *testing.T) {
		d := startDaemon(t, bin, nil, append(common, "--shutdown-delay", "10m")...)
		d.waitReady(15 * time.Second)
		if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		for code, _ := d.get("/readyz"); code != 503; code, _ = d.get("/readyz") {
			time.Sleep(5 * time.Millisecond)
		}
		if code := d.stop(); code != 0 { // the second SIGTERM
			t.Fatalf("exit %d, want 0", code)
		}
		if !strings.Contains(d.out.String(), "second signal: cutting the shutdown delay short") {
			t.Fatalf("log:\n%s", d.out.String())
		}
	})
}

// hasLines reports whether text (INFO as redis-cli prints it) has every
// one of lines as a whole line.
func hasLines(text string, lines ...string) bool {
	have := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		have[strings.TrimRight(l, "\r")] = true
	}
	for _, l := range lines {
		if !have[l] {
			return false
		}
	}
	return true
}

// waitExit waits for the process to end on its own and returns its exit code.
func (d *daemonProc) waitExit(within time.Duration) int {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(within):
		d.t.Fatalf("snowflaked did not exit within %v:\n%s", within, d.out.String())
	}
	var ee *exec.ExitError
	if errors.As(d.err, &ee) {
		return ee.ExitCode()
	}
	if d.err != nil {
		d.t.Fatal(d.err)
	}
	return 0
}
