package idlease

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// The tests here run cmd/idlease-example as a child process holding an
// embedded lease on the one free slot of the fleet, do to it what a
// program's life does (SIGKILL, SIGSTOP past the session timeout, a cut
// from ZooKeeper, SIGTERM), then let a worker (a coordinator of kind
// worker, as snowflaked runs it) take the slot and issue. The checks: no
// ID twice across the two; every ID of the child at or below the
// reservation the successor found (so inside what ZooKeeper confirmed to
// the child), every ID of the successor above it.

// exampleBinary builds cmd/idlease-example once per test binary.
func exampleBinary(t *testing.T) string {
	t.Helper()
	exampleBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "idlease-example-")
		if err != nil {
			exampleBuild.err = err
			return
		}
		exampleBuild.path = filepath.Join(dir, "idlease-example")
		out, err := exec.Command("go", "build", "-o", exampleBuild.path, "../../cmd/idlease-example").CombinedOutput()
		if err != nil {
			exampleBuild.err = &buildError{err: err, out: string(out)}
		}
	})
	if exampleBuild.err != nil {
		t.Fatalf("build cmd/idlease-example: %v", exampleBuild.err)
	}
	return exampleBuild.path
}

var exampleBuild struct {
	once sync.Once
	path string
	err  error
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return e.err.Error() + ": " + e.out }

// child is the example program issuing an ID about every millisecond.
type child struct {
	t    *testing.T
	cmd  *exec.Cmd
	mu   sync.Mutex
	ids  []int64
	done chan struct{} // closed when its stdout ends
}

func startChild(t *testing.T, root string, servers ...string) *child {
	t.Helper()
	args := []string{"--zk-insecure", "--zk", strings.Join(servers, ","), "--zk-root", root, "--count", "0", "--every", "1ms",
		"--session-timeout", "2s", "--renew", "200ms", "--horizon", "1s", "--wait", "5s"}
	cmd := exec.Command(exampleBinary(t), args...)
	cmd.Stderr = testWriter{t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		<-c.done
		_ = cmd.Wait()
	})
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.SplitN(sc.Text(), "\t", 2)
			id, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				t.Errorf("child printed %q", sc.Text())
				continue
			}
			c.mu.Lock()
			c.ids = append(c.ids, id)
			c.mu.Unlock()
		}
	}()
	waitFor(t, 30*time.Second, "the child issues", func() bool { return len(c.issued()) >= 100 })
	return c
}

func (c *child) issued() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.ids...)
}

func (c *child) signal(s syscall.Signal) {
	if err := c.cmd.Process.Signal(s); err != nil {
		c.t.Fatal(err)
	}
}

// exited waits for the child to end and returns its exit code.
func (c *child) exited(within time.Duration) int {
	c.t.Helper()
	select {
	case <-c.done:
	case <-time.After(within):
		c.t.Fatalf("the child did not exit within %v", within)
	}
	_ = c.cmd.Wait()
	return c.cmd.ProcessState.ExitCode()
}

// successor is a worker's coordinator on root, issuing from its lease.
type successor struct {
	c    *coordinator.Coordinator
	stop func()
}

func startSuccessor(t *testing.T, root string, servers ...string) *successor {
	t.Helper()
	cfg := testConfig(root, servers...).Config
	cfg.Kind, cfg.Program, cfg.Advertise = zklayout.KindWorker, "snowflaked", "127.0.0.1:7609"
	c, err := coordinator.New(cfg, testLogger(t, "successor"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	s := &successor{c: c, stop: func() { cancel(); <-done }}
	t.Cleanup(s.stop)
	waitFor(t, 30*time.Second, "the successor serves", c.Ready)
	return s
}

// issue takes n IDs from the successor's lease.
func (s *successor) issue(t *testing.T, n int) []int64 {
	t.Helper()
	out := make([]int64, 0, n)
	for len(out) < n {
		g := s.c.Generator()
		if g == nil {
			t.Fatal("the successor lost its lease")
		}
		id, err := g.Next()
		if err != nil {
			t.Fatalf("successor: %v", err)
		}
		out = append(out, id)
	}
	return out
}

// checkHandover: no ID twice; the child's at or below the successor's
// floor (the reservation it found), the successor's above it, all of slot.
func checkHandover(t *testing.T, slot snowflake.Slot, childIDs, succIDs []int64, floorMs int64) {
	t.Helper()
	seen := make(map[int64]bool, len(childIDs)+len(succIDs))
	for i, ids := range [][]int64{childIDs, succIDs} {
		for _, id := range ids {
			f := decode(t, id)
			if seen[id] {
				t.Fatalf("ID %d issued twice", id)
			}
			seen[id] = true
			if f.Slot() != slot {
				t.Fatalf("ID %d of slot %s, want %s", id, f.Slot(), slot)
			}
			if i == 0 && f.UnixMs > floorMs {
				t.Fatalf("the embedded child issued %d at %d ms, above the reservation %d its successor found", id, f.UnixMs, floorMs)
			}
			if i == 1 && f.UnixMs <= floorMs {
				t.Fatalf("the successor issued %d at %d ms, not above the reservation %d it found", id, f.UnixMs, floorMs)
			}
		}
	}
	t.Logf("%d IDs from the embedded child, %d from the successor above %d ms: none twice", len(childIDs), len(succIDs), floorMs)
}

// fleetWithOneSlot starts ZooKeeper and a root whose only free slot is
// dc05-m11.
func fleetWithOneSlot(t *testing.T, root string) (*zktest.Server, snowflake.Slot) {
	zs := zktest.Start(t)
	obs := dial(t, zs.Addr())
	initRoot(t, obs, root)
	block(t, obs, root, 11)
	return zs, snowflake.Slot{Datacenter: testDC, Machine: 11}
}

// SIGKILL: no release; the successor waits out the session and the
// reservation, then issues above it.
func TestEmbeddedProcessKilled(t *testing.T) {
	zs, slot := fleetWithOneSlot(t, "/killed")
	ch := startChild(t, "/killed", zs.Addr())
	ch.signal(syscall.SIGKILL)
	ch.exited(10 * time.Second)
	s := startSuccessor(t, "/killed", zs.Addr())
	checkHandover(t, slot, ch.issued(), s.issue(t, 5000), s.c.Status().FloorMs)
}

// SIGSTOP past the session timeout: the successor takes the slot; the
// child, continued, finds its ceiling passed and its lease gone, and
// issues nothing more (its Next waits, then it exits 1).
func TestEmbeddedProcessPaused(t *testing.T) {
	zs, slot := fleetWithOneSlot(t, "/paused")
	ch := startChild(t, "/paused", zs.Addr())
	ch.signal(syscall.SIGSTOP)
	s := startSuccessor(t, "/paused", zs.Addr())
	succ := s.issue(t, 2000)
	ch.signal(syscall.SIGCONT)
	if rc := ch.exited(30 * time.Second); rc != 1 {
		t.Fatalf("the continued child exited %d, want 1 (no lease within --wait)", rc)
	}
	succ = append(succ, s.issue(t, 2000)...)
	checkHandover(t, slot, ch.issued(), succ, s.c.Status().FloorMs)
}

// Cut from ZooKeeper by a proxy past the session timeout: the child issues
// up to its confirmed ceiling only; after the heal it learns its lease is
// gone (its queued writes resent on a new session are fenced) and issues
// nothing more while the successor holds the slot.
func TestEmbeddedProcessCut(t *testing.T) {
	zs, slot := fleetWithOneSlot(t, "/cut")
	p := faultproxy.New(t, zs.Addr())
	ch := startChild(t, "/cut", p.Addr(), p.Addr(), p.Addr())
	p.Blackhole()
	s := startSuccessor(t, "/cut", zs.Addr())
	succ := s.issue(t, 2000)
	p.Heal()
	if rc := ch.exited(30 * time.Second); rc != 1 {
		t.Fatalf("the cut-off child exited %d, want 1 (no lease within --wait)", rc)
	}
	succ = append(succ, s.issue(t, 2000)...)
	checkHandover(t, slot, ch.issued(), succ, s.c.Status().FloorMs)
}

// SIGTERM: the child closes its lease (exit 0), which lowers the
// reservation to its last ID, so the successor starts right above it.
func TestEmbeddedProcessTerminated(t *testing.T) {
	zs, slot := fleetWithOneSlot(t, "/terminated")
	ch := startChild(t, "/terminated", zs.Addr())
	ch.signal(syscall.SIGTERM)
	if rc := ch.exited(15 * time.Second); rc != 0 {
		t.Fatalf("the child exited %d after SIGTERM, want 0", rc)
	}
	var last int64
	for _, id := range ch.issued() {
		last = max(last, decode(t, id).UnixMs)
	}
	s := startSuccessor(t, "/terminated", zs.Addr())
	if floor := s.c.Status().FloorMs; floor != last {
		t.Fatalf("the successor found the reservation at %d, want it released to the child's last ID at %d", floor, last)
	}
	checkHandover(t, slot, ch.issued(), s.issue(t, 5000), s.c.Status().FloorMs)
}
