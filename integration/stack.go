//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// Timings of the stack under test, passed to the compose file. The session
// timeout and renew are short, so that every fault heals within seconds;
// the horizons are the daemon's defaults (40 s, 5 s while a standby waits,
// issue 15), not passed: the suite proves what a fleet gets out of the box.
// A scenario that needs other settings adds a worker of its own with them.
const (
	sessionTimeout = 4 * time.Second
	renew          = 400 * time.Millisecond
	maxSkew        = 10 * time.Second
	datacenter     = 3 // the workers are pinned to one datacenter: 32 slots
	zkRoot         = "/snowflake"
)

// The daemon's default horizons, which the workers run with (checked at
// stack up, checkHorizons).
var (
	horizon        = coordinator.DefaultConfig().Horizon
	standbyHorizon = coordinator.DefaultConfig().StandbyHorizon
)

// Stack is one compose project: zk1..zk3 and the worker service.
type Stack struct {
	Project string
	repo    string
	compose []string
	env     []string
	// overrides are compose files applied over docker-compose.yml (the TLS
	// variant's, tls_test.go).
	overrides []string
	log       func(format string, a ...any)
	// ids are the stack's ZooKeeper identities (Secrets, at Up).
	ids Identities
	// zkRestart is how long the last restart of stopped ZooKeeper servers
	// took until the quorum was back (0: none yet): scenario n sizes its
	// hold with it.
	zkRestart time.Duration
}

// NewStack returns a stack for a project of its own; Down removes it.
func NewStack(t testing.TB, project string) *Stack {
	t.Helper()
	cmd, err := composeCommand()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	s := &Stack{
		Project: project, repo: repo, compose: cmd,
		env: []string{
			"WORKER_IMAGE=" + workerImage(),
			"ZK_IMAGE=" + zkImage(),
			fmt.Sprintf("SNOWFLAKE_DATACENTER=%d", datacenter),
			"SNOWFLAKE_SESSION_TIMEOUT=" + sessionTimeout.String(),
			"SNOWFLAKE_RENEW=" + renew.String(),
			// Wide, so that a clock moved by the chaos build keeps serving
			// and the suite tests what the leases alone guarantee; the skew
			// guard (refusing at 1 s by default) would hide it.
			"SNOWFLAKE_MAX_SKEW=" + maxSkew.String(),
			"SNOWFLAKE_ZK_ROOT=" + zkRoot,
			"SNOWFLAKE_LOG_LEVEL=" + envOr("SNOWFLAKE_LOG_LEVEL", "info"),
		},
		log: t.Logf,
	}
	return s
}

// workerImage is the worker image the suite runs: the chaos build, whose
// clock the scenarios move, unless WORKER_IMAGE names another.
func workerImage() string { return envOr("WORKER_IMAGE", "snowfleet/snowflaked:chaos") }

// zkImage is the ZooKeeper image, ZK_IMAGE (e.g. the official zookeeper:3.8)
// or the one deploy/build-images.sh makes.
func zkImage() string { return envOr("ZK_IMAGE", "snowfleet/zookeeper:3.8") }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Compose runs a compose command on the project.
func (s *Stack) Compose(ctx context.Context, args ...string) (string, error) {
	return s.composeWith(ctx, nil, args...)
}

// composeWith runs a compose command with extra environment (later values
// win): the containers it creates take them.
func (s *Stack) composeWith(ctx context.Context, extra []string, args ...string) (string, error) {
	full := append(slices.Clone(s.compose[1:]), "-p", s.Project, "-f", filepath.Join(s.repo, "docker-compose.yml"))
	for _, f := range s.overrides {
		full = append(full, "-f", f)
	}
	return run(ctx, append(slices.Clone(s.env), extra...), s.compose[0], append(full, args...)...)
}

// ScaleWith is Scale where the workers it creates get extra environment
// (e.g. SNOWFLAKE_HORIZON=12s); existing ones are left as they are.
func (s *Stack) ScaleWith(ctx context.Context, n int, extra ...string) error {
	_, err := s.composeWith(ctx, extra, "up", "-d", "--no-deps", "--no-recreate", "--scale", fmt.Sprintf("worker=%d", n), "worker")
	return err
}

// Up makes the ZooKeeper identities, starts the ensemble, waits for its
// quorum, makes the root as the operator, then starts n workers.
func (s *Stack) Up(ctx context.Context, workers int) error {
	if err := s.Secrets(ctx); err != nil {
		return err
	}
	if _, err := s.Compose(ctx, "up", "-d", "zk1", "zk2", "zk3"); err != nil {
		return err
	}
	if err := s.WaitZK(ctx, 90*time.Second); err != nil {
		return err
	}
	if err := s.Init(ctx, true); err != nil {
		return err
	}
	return s.Scale(ctx, workers)
}

// Init runs the compose file's init service (snowflakectl init) to its end:
// workers never make their root. newFleet skips the wait an ensemble that
// lost its data needs.
func (s *Stack) Init(ctx context.Context, newFleet bool) error {
	// A skew bound of 10 s: scenarios run workers with --max-skew 5s.
	env := []string{fmt.Sprintf("SNOWFLAKE_NEW_FLEET=%t", newFleet), "SNOWFLAKE_INIT_MAX_SKEW=10s"}
	out, err := s.composeWith(ctx, env, "run", "--rm", "-T", "--no-deps", "init")
	if err != nil {
		return fmt.Errorf("snowflakectl init: %w: %s", err, out)
	}
	return nil
}

// Scale sets the number of worker containers (started or stopped ones).
func (s *Stack) Scale(ctx context.Context, n int) error {
	_, err := s.Compose(ctx, "up", "-d", "--no-deps", "--no-recreate", "--scale", fmt.Sprintf("worker=%d", n), "worker")
	return err
}

// Down removes containers, networks and volumes.
func (s *Stack) Down(ctx context.Context) error {
	_, err := s.Compose(ctx, "down", "-v", "--remove-orphans", "-t", "2")
	return err
}

// Logs returns the last lines of the services' logs.
func (s *Stack) Logs(ctx context.Context, tail int, services ...string) string {
	out, err := s.Compose(ctx, append([]string{"logs", "--no-color", fmt.Sprintf("--tail=%d", tail)}, services...)...)
	if err != nil {
		return err.Error()
	}
	return out
}

// Containers lists the project's containers of a service, by number.
func (s *Stack) Containers(ctx context.Context, service string) ([]Container, error) {
	out, err := docker(ctx, "ps", "-aq", "--no-trunc",
		"--filter", "label=com.docker.compose.project="+s.Project,
		"--filter", "label=com.docker.compose.service="+service)
	if err != nil {
		return nil, err
	}
	cs, err := inspect(ctx, strings.Fields(out))
	slices.SortFunc(cs, func(a, b Container) int { return a.Number - b.Number })
	return cs, err
}

// Workers lists the worker containers.
func (s *Stack) Workers(ctx context.Context) ([]Container, error) { return s.Containers(ctx, "worker") }

// ZooKeepers lists zk1, zk2, zk3 (in that order; absent ones are missing).
func (s *Stack) ZooKeepers(ctx context.Context) ([]Container, error) {
	var all []Container
	for _, n := range []string{"zk1", "zk2", "zk3"} {
		cs, err := s.Containers(ctx, n)
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
	}
	return all, nil
}

// ZKServers are the published client addresses of the running servers.
func (s *Stack) ZKServers(ctx context.Context) ([]string, error) {
	zks, err := s.ZooKeepers(ctx)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, z := range zks {
		if z.Running && z.Addr("2181") != "" {
			addrs = append(addrs, z.Addr("2181"))
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no ZooKeeper server is running")
	}
	return addrs, nil
}

// Mode asks a server `srvr` on its published port: leader, follower,
// standalone, or "" (not serving).
func Mode(addr string) string {
	out, _ := zktest.FourLetter(addr, "srvr", 2*time.Second)
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// WaitZK waits until every running server is in a quorum (leader or
// follower, exactly one leader).
func (s *Stack) WaitZK(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		zks, err := s.ZooKeepers(ctx)
		if err == nil {
			leaders, ok := 0, len(zks) > 0
			for _, z := range zks {
				switch Mode(z.Addr("2181")) {
				case "leader":
					leaders++
				case "follower":
				default:
					ok = false
				}
			}
			if ok && leaders == 1 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("ZooKeeper has no quorum after %v (%v)", limit, err)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// DialZK opens a session on the published ports of the running servers,
// without credentials: it reads what the world reads.
func (s *Stack) DialZK(ctx context.Context) (*zk.Conn, error) { return s.dial(ctx, "") }

// dial opens a session on the published ports of the running servers, with
// the credentials given ("" for none).
func (s *Stack) dial(ctx context.Context, auth string) (*zk.Conn, error) {
	servers, err := s.ZKServers(ctx)
	if err != nil {
		return nil, err
	}
	return zkconn.Dial(servers, auth, 10*time.Second, hclog.NewNullLogger())
}

// CopyTo writes content into a file of a container (running or stopped):
// `docker cp` needs no shell in the FROM-scratch image.
func (s *Stack) CopyTo(ctx context.Context, c Container, path, content string) error {
	f, err := os.CreateTemp("", "snowfleet-it-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(content); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	_, err = docker(ctx, "cp", f.Name(), c.ID+":"+path)
	return err
}

// Network is the project's network of that name in the compose file.
func (s *Stack) Network(name string) string { return s.Project + "_" + name }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
