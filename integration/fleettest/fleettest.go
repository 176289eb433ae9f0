package fleettest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/testenv"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
)

// Package is the import path of the daemon that Binary builds.
const Package = "github.com/snowfleet/snowfleet/cmd/snowflaked"

// builds are the binaries built so far, by build tags.
var builds struct {
	mu   sync.Mutex
	dir  string
	bins map[string]*binary
}

type binary struct {
	once sync.Once
	path string
	err  error
}

// Main runs the tests of a package and removes the binaries Binary built:
// func TestMain(m *testing.M) { os.Exit(fleettest.Main(m)) }.
func Main(m *testing.M) int {
	testenv.TestOnly("fleettest")
	rc := m.Run()
	builds.mu.Lock()
	defer builds.mu.Unlock()
	if builds.dir != "" {
		_ = os.RemoveAll(builds.dir)
	}
	return rc
}

// Binary builds snowflaked (once per test binary, with the race detector
// when the tests run with it) and returns its path.
func Binary(t testing.TB) string { return BinaryWith(t, "") }

// BinaryWith is Binary built with build tags (comma-separated), e.g.
// "chaos" for the build whose clock a file can move.
func BinaryWith(t testing.TB, tags string) string {
	testenv.TestOnly("fleettest")
	t.Helper()
	builds.mu.Lock()
	if builds.bins == nil {
		builds.bins = map[string]*binary{}
	}
	b := builds.bins[tags]
	if b == nil {
		b = &binary{}
		builds.bins[tags] = b
	}
	if builds.dir == "" {
		dir, err := os.MkdirTemp("", "fleettest-")
		if err != nil {
			builds.mu.Unlock()
			t.Fatalf("fleettest: %v", err)
		}
		builds.dir = dir
	}
	dir := builds.dir
	builds.mu.Unlock()
	b.once.Do(func() {
		name := "snowflaked"
		if tags != "" {
			name += "-" + strings.ReplaceAll(tags, ",", "-")
		}
		b.path = filepath.Join(dir, name)
		args := []string{"build", "-o", b.path}
		if raceEnabled {
			args = append(args, "-race")
		}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		out, err := exec.Command("go", append(args, Package)...).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %w\n%s", Package, err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("fleettest: %v", b.err)
	}
	return b.path
}

// Options configure one worker. Zero durations leave the daemon's default.
type Options struct {
	// ZK is the ZooKeeper address list (comma-separated) for --zk.
	ZK string
	// Root is --zk-root; empty leaves the default /snowflake.
	Root string
	// SessionTimeout is --session-timeout; default 2s here, so a killed
	// worker's lease goes within seconds.
	SessionTimeout time.Duration
	// Renew and Horizon are --renew and --horizon when set.
	Renew, Horizon time.Duration
	// Args are further flags.
	Args []string
	// Tags are build tags for the binary (see BinaryWith), e.g. "chaos".
	Tags string
	// Env are extra KEY=value variables; SNOWFLAKE_* from the test's own
	// environment are never passed on.
	Env []string
}

// Worker is one running snowflaked process.
type Worker struct {
	// Addr is the RESP address (--listen and --advertise), HTTP the admin one.
	Addr, HTTP string
	// LogPath receives the process's stdout and stderr.
	LogPath string

	t      testing.TB
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // from Wait, valid once exited is closed
}

// Start runs a worker and stops it (SIGKILL) when the test ends. It does
// not wait for a lease; see WaitReady.
func Start(t testing.TB, opts Options) *Worker {
	testenv.TestOnly("fleettest")
	t.Helper()
	bin := BinaryWith(t, opts.Tags)
	if opts.SessionTimeout == 0 {
		opts.SessionTimeout = 2 * time.Second
	}
	// A port found free can be taken by another process before the worker
	// binds it (test packages run in parallel): start again on new ports.
	for attempt := 1; ; attempt++ {
		w := startOnce(t, bin, opts)
		if attempt == 5 || !w.lostPortRace() {
			return w
		}
	}
}

// lostPortRace waits until the worker answers /healthz (both ports bound)
// or exits, and reports an exit because a port was taken meanwhile.
func (w *Worker) lostPortRace() bool {
	err := w.waitFor("/healthz", 10*time.Second)
	return errors.Is(err, errExited) && strings.Contains(w.Log(), "address already in use")
}

func startOnce(t testing.TB, bin string, opts Options) *Worker {
	t.Helper()
	w := &Worker{t: t, Addr: zktest.FreeAddr(t), HTTP: zktest.FreeAddr(t), exited: make(chan struct{})}
	args := []string{"--zk", opts.ZK, "--listen", w.Addr, "--http", w.HTTP,
		"--advertise", w.Addr, "--session-timeout", opts.SessionTimeout.String()}
	if opts.Root != "" {
		args = append(args, "--zk-root", opts.Root)
	}
	if opts.Renew != 0 {
		args = append(args, "--renew", opts.Renew.String())
	}
	if opts.Horizon != 0 {
		args = append(args, "--horizon", opts.Horizon.String())
	}
	args = InsecureUnlessAuth(append(args, opts.Args...), opts.Env)
	InitFleet(t, strings.Split(opts.ZK, ","), opts.Root, FlagValue(opts.Args, "--zk-auth"), tlsfiles.Files{})
	logf, err := os.CreateTemp(t.TempDir(), "snowflaked-*.log")
	if err != nil {
		t.Fatalf("fleettest: %v", err)
	}
	w.LogPath = logf.Name()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(cleanEnv(), opts.Env...)
	cmd.SysProcAttr = workerProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("fleettest: start %s: %v", bin, err)
	}
	w.cmd = cmd
	go func() { w.err = cmd.Wait(); logf.Close(); close(w.exited) }()
	t.Cleanup(w.Kill)
	return w
}

// cleanEnv drops SNOWFLAKE_* so the caller's environment cannot change the
// flags a test chose.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SNOWFLAKE_") {
			env = append(env, kv)
		}
	}
	return env
}

// WaitReady waits until /readyz answers 200 (a lease held and serving).
func (w *Worker) WaitReady(timeout time.Duration) {
	w.t.Helper()
	if err := w.waitFor("/readyz", timeout); err != nil {
		w.t.Fatalf("fleettest: worker %s not ready: %v\nlog %s:\n%s", w.Addr, err, w.LogPath, w.Log())
	}
}

// errExited: the worker's process ended while waitFor polled.
var errExited = errors.New("worker exited")

// waitFor polls path on the admin port until it answers 200, the process
// exits (errExited) or timeout passes.
func (w *Worker) waitFor(path string, timeout time.Duration) error {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	last := errors.New("no answer yet")
	for time.Now().Before(deadline) {
		select {
		case <-w.exited:
			return fmt.Errorf("%w: %v", errExited, w.err)
		default:
		}
		resp, err := hc.Get("http://" + w.HTTP + path)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Errorf("%s answered %s", path, resp.Status)
		} else {
			last = err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("after %v: %w", timeout, last)
}

// Kill sends SIGKILL (a crash: the lease stays until the session expires)
// and waits for the exit. Safe to call twice.
func (w *Worker) Kill() {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
}

// Term sends SIGTERM (a clean shutdown that releases the lease) and waits
// up to timeout for the exit; it returns the process's exit error.
func (w *Worker) Term(timeout time.Duration) error {
	w.t.Helper()
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.exited:
		return w.err
	case <-time.After(timeout):
		w.Kill()
		return fmt.Errorf("worker %s did not exit %v after SIGTERM", w.Addr, timeout)
	}
}

// Log is the worker's output so far (the last 8 KB).
func (w *Worker) Log() string {
	b, _ := os.ReadFile(w.LogPath)
	if len(b) > 8<<10 {
		b = b[len(b)-8<<10:]
	}
	return string(b)
}

// WaitFor polls cond every 20ms until it holds or timeout passes; it
// reports whether it held.
func WaitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// StartFleet runs a ZooKeeper and n workers under root, with a short renew
// and horizon, and waits until each holds a lease.
func StartFleet(t testing.TB, root string, n int) (*zktest.Server, []*Worker) {
	t.Helper()
	zks := zktest.Start(t)
	ws := make([]*Worker, n)
	for i := range ws {
		ws[i] = Start(t, Options{ZK: zks.Addr(), Root: root, Renew: 200 * time.Millisecond, Horizon: time.Second})
	}
	for _, w := range ws {
		w.WaitReady(20 * time.Second)
	}
	return zks, ws
}

// InsecureUnlessAuth adds --zk-insecure to a worker's args unless they or
// env (SNOWFLAKE_<NAME>=value items) give ZooKeeper credentials or say
// --zk-insecure themselves: a worker refuses to run with neither, and most
// tests are not about credentials.
func InsecureUnlessAuth(args, env []string) []string {
	for _, a := range args {
		for _, f := range []string{"--zk-auth", "--zk-auth-file", "--zk-insecure"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				return args
			}
		}
	}
	for _, kv := range env {
		for _, k := range []string{"SNOWFLAKE_ZK_AUTH=", "SNOWFLAKE_ZK_AUTH_FILE=", "SNOWFLAKE_ZK_INSECURE="} {
			if strings.HasPrefix(kv, k) {
				return args
			}
		}
	}
	return append(args, "--zk-insecure")
}

// FlagValue is the value of flag name in args (--name value or
// --name=value), or "".
func FlagValue(args []string, name string) string {
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
	}
	return ""
}
