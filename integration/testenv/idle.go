package testenv

import (
	"os/exec"
	"testing"
)

// IdleCommand is exec.Command(name, args...) run under the SCHED_IDLE
// policy (util-linux's chrt, in every Debian): the process gets a core only
// when nothing else on the machine wants it. A latency test starts its load
// (hog connections, hostile clients) this way, so that the load stands for
// clients on other machines, as in production. On this machine's two cores
// (CONFIG_HZ=250, no kernel preemption) a load process at the same priority
// takes a core from the worker, or from the measuring client, a scheduler
// tick (4 ms) at a time: perf sched showed the worker's loop threads
// runnable and waiting 30-40 times a second for over a millisecond, up to
// 8 ms, and the measuring client's 90 times a second, which the worker
// cannot shorten and a p99 goal of 5 ms cannot absorb. SCHED_IDLE, not nice
// 19: a nice task, once picked, still runs out its slice; a task of
// ordinary policy that wakes always preempts an idle-policy one.
func IdleCommand(t testing.TB, name string, args ...string) *exec.Cmd {
	t.Helper()
	chrt, err := exec.LookPath("chrt")
	if err != nil {
		t.Fatalf("testenv: chrt (apt-get install util-linux) runs a test's load at idle priority: %v", err)
	}
	return exec.Command(chrt, append([]string{"--idle", "0", name}, args...)...)
}
