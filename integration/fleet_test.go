//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// Bounds the suite asserts. Recovery is measured from the heal (or the
// command that ends the fault) until every expected worker serves IDs and
// reports ready.
const (
	recoveryBound = 15 * time.Second
	minIDs        = 1_000_000
	settle        = 2 * time.Second // collecting after a heal, before checking
)

// env is what a scenario gets.
type env struct {
	ctx  context.Context
	t    testing.TB // the subtest, or the mutation proof's recorder
	st   *Stack
	col  *Collector
	mon  *Monitor
	prom *Prom
}

// result is what a scenario reports: how many workers must serve after it;
// when serving stopped (or was put at risk), zero if it never does; when
// it served again, if the scenario saw it itself (else the harness measures
// until the whole fleet serves); how long the scenario holds the fault by
// design, which the bound allows on top of recoveryBound; a note.
type result struct {
	want   int
	fault  time.Time
	back   time.Time
	outage time.Duration
	note   string
}

// scenario injects a fault and heals it. retries says why the Go client
// may retry requests in it (a worker stops or refuses); empty, it must not.
type scenario struct {
	letter  string // its row in integration/README.md: c2, g2l
	title   string // the fault, in a few words
	workers int    // the fleet it starts from
	retries string
	run     func(e env) result
}

// name is the subtest's and the report row's name: the letter, then the
// title, so that -run 'TestFleet$/^(p|q)_' picks scenarios by letter.
func (sc scenario) name() string { return sc.letter + " " + sc.title }

func TestFleet(t *testing.T) {
	requireDocker(t)
	redis.SetLogger(quietRedis{})
	ctx := context.Background()
	reapStale(ctx, t)
	ensureImages(t)

	st := NewStack(t, fmt.Sprintf("snowfleet-it-%d", os.Getpid()))
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(ctx, t, st)
		}
		if err := st.Down(ctx); err != nil {
			t.Errorf("tear down %s: %v", st.Project, err)
		}
	})
	upStart := time.Now()
	if err := st.Up(ctx, 3); err != nil {
		t.Fatalf("stack up: %v", err)
	}
	if _, err := WaitServing(ctx, st, 3, 90*time.Second); err != nil {
		t.Fatalf("stack up: %v", err)
	}
	t.Logf("stack %s up in %v", st.Project, time.Since(upStart).Round(100*time.Millisecond))
	if err := checkHorizons(ctx, st); err != nil {
		t.Fatal(err)
	}
	if err := checkSecured(ctx, st); err != nil {
		t.Fatalf("stack up: %v", err)
	}
	prom, err := StartPrometheus(ctx, st, t.TempDir())
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	if note, err := prom.WaitAllUp(ctx, promUpBound); err != nil {
		t.Fatalf("at the start: %v", err)
	} else {
		t.Logf("at the start: %s", note)
	}

	col := StartCollector(ctx, st, t.Logf)
	t.Cleanup(col.Stop)
	mon := StartMonitor(ctx, st)
	t.Cleanup(mon.Stop)
	_ = sleep(ctx, 3*time.Second)

	rep := &report{start: time.Now()}
	prev := Check(ctx, st, col, mon, time.Now().Add(-time.Second))
	if prev.Duplicates > 0 || len(prev.Problems) > 0 {
		t.Fatalf("before any fault: %d duplicates, problems %v", prev.Duplicates, prev.Problems)
	}
	col.TakeErrors()
	su := &suite{ctx: ctx, st: st, col: col, mon: mon, prom: prom, prev: prev}
	for _, sc := range scenarios() {
		t.Run(sc.name(), func(t *testing.T) { rep.rows = append(rep.rows, su.run(t, sc)) })
		rep.total = su.prev.IDs
	}
	mon.Stop()
	col.Stop()
	last := Check(ctx, st, col, mon, time.Now())
	for _, p := range last.Problems {
		t.Errorf("after the last scenario: %s", p)
	}
	ha := AuditHistory(ctx, st, col)
	for _, p := range ha.Problems {
		t.Errorf("history audit: %s", p)
	}
	t.Logf("history audit: %s", ha)
	// The operator's tools on the same IDs: a correct fleet, through every
	// fault above, gives audit nothing to find (the mutation proof shows it
	// finding what broken workers issue).
	toolAudit(ctx, t, st, col)
	rep.total = last.IDs
	path, err := rep.write()
	if err != nil {
		t.Errorf("write the report: %v", err)
	}
	t.Logf("report written to %s", path)
	if rep.total < minIDs {
		t.Errorf("only %d IDs collected over the suite, want at least %d", rep.total, minIDs)
	}
}

// suite is the fleet the scenarios run against, and the check that ended
// the scenario before (each check counts from it).
type suite struct {
	ctx  context.Context
	st   *Stack
	col  *Collector
	mon  *Monitor
	prom *Prom
	prev Verdict
}

// run runs one scenario and the checks every scenario gets, reports each
// failed check on t (the subtest, or the mutation proof's recorder), and
// returns the scenario's report row.
func (s *suite) run(t testing.TB, sc scenario) row {
	ctx, st, col, mon := s.ctx, s.st, s.col, s.mon
	e := env{ctx: ctx, t: t, st: st, col: col, mon: mon, prom: s.prom}
	// The fleet it starts from, outside its counts.
	e.fleet(sc.workers)
	e.sleep(time.Second)
	col.TakeErrors()
	col.TakeCauses()
	before := col.snap()
	mark := mon.Mark()
	res := sc.run(e)
	r := row{Name: sc.name(), Limit: recoveryBound + res.outage, Notes: res.note}
	if _, err := WaitServing(ctx, st, res.want, recoveryBound+30*time.Second); err != nil {
		t.Errorf("after the heal: %v", err)
	}
	if !res.fault.IsZero() {
		back := res.back
		if back.IsZero() {
			back = time.Now()
		}
		r.Recovery = back.Sub(res.fault)
		if r.Recovery > r.Limit {
			t.Errorf("served again %v after the fault, bound %v", r.Recovery.Round(100*time.Millisecond), r.Limit)
		}
	}
	healed := time.Now()
	if note, err := s.prom.WaitAllUp(ctx, promUpBound); err != nil {
		t.Errorf("after the heal: %v", err)
	} else {
		r.Notes += "; " + note
	}
	_ = sleep(ctx, settle-time.Since(healed))
	v := Check(ctx, st, col, mon, time.Now().Add(-time.Second))
	after := col.snap()
	d := after.client.sub(before.client)
	r.IDs, r.ClientErrs, r.DirectErrs = after.ids-before.ids, after.clientErrs-before.clientErrs, after.redisErrs-before.redisErrs
	r.Retries, r.Protocol = int64(d.retries), after.protocolErrs-before.protocolErrs
	r.Ceilings = v.Ceilings.Checked // each Check counts only the IDs it checked first
	r.Duplicates = v.Duplicates - s.prev.Duplicates
	r.Violations = len(v.Violations) - len(s.prev.Violations)
	r.Errors, r.Examples = col.TakeErrors()
	if r.Duplicates > 0 {
		t.Errorf("%d duplicate IDs", r.Duplicates)
	}
	if r.Violations > 0 {
		t.Errorf("IDs of a slot did not increase in a client's order: %v", v.Violations[len(s.prev.Violations):][:min(5, r.Violations)])
	}
	if n := len(v.Bad) - len(s.prev.Bad); n > 0 {
		t.Errorf("%d IDs outside datacenter %d or not decodable: %v", n, datacenter, v.Bad[len(s.prev.Bad):][:min(5, n)])
	}
	for _, p := range v.Problems {
		t.Errorf("invariant: %s", p)
	}
	causes := col.TakeCauses()
	if len(causes) > 0 {
		t.Logf("the Go client's worker failures: %s", strings.Join(causes, "; "))
	}
	if sc.retries == "" && d.retries > 0 && stalled(d, causes) {
		r.Notes += fmt.Sprintf("; %.0f request(s) timed out in a stall and were retried (at most %d pass)", d.retries, maxStallRetries)
	}
	for _, p := range clientProblems(d, r.Protocol, sc.retries, causes) {
		t.Errorf("go client: %s", p)
	}
	problems, rounds, zkRounds := mon.Since(mark)
	for _, p := range problems {
		t.Errorf("during the scenario: %s", p)
	}
	r.HolderChecks = zkRounds
	if rounds < 10 || zkRounds < 3 {
		t.Errorf("the monitor looked too seldom: %d status rounds, %d ZooKeeper listings", rounds, zkRounds)
	}
	r.Failed = t.Failed()
	t.Logf("%s: %d IDs, %d client errors (%d retries, %d protocol), %d direct errors, recovered in %v; %s",
		sc.name(), r.IDs, r.ClientErrs, r.Retries, r.Protocol, r.DirectErrs, r.Recovery.Round(10*time.Millisecond), res.note)
	s.prev = v
	return r
}

// requireDocker fails the test without a working Docker and compose, so
// that the suite never passes by skipping; go test -short or
// SNOWFLEET_SKIP_DOCKER=1 skips it instead, except in CI (testenv.Require).
func requireDocker(t *testing.T) {
	t.Helper()
	testenv.Require(t, "docker")
	if _, err := composeCommand(); err != nil {
		t.Fatalf("Docker compose is not usable here: %v (make deps installs it; SNOWFLEET_SKIP_DOCKER=1 skips this suite instead)", err)
	}
}

// ensureImages builds the chaos worker image from this tree (unless
// SNOWFLEET_IT_NO_BUILD=1 and it exists) under the name the stack runs, and
// brings the ZooKeeper and Prometheus images up to date (build-images.sh
// skips each when its inputs are unchanged, and only checks an image that is
// not ours).
func ensureImages(t *testing.T) {
	t.Helper()
	what := []string{"zookeeper", "prometheus"}
	if os.Getenv("SNOWFLEET_IT_NO_BUILD") != "1" || exec.Command("docker", "image", "inspect", workerImage()).Run() != nil {
		what = append([]string{"chaos"}, what...)
	}
	start := time.Now()
	cmd := exec.Command(filepath.Join("..", "deploy", "build-images.sh"), what...)
	cmd.Env = append(os.Environ(), "CHAOS_IMAGE="+workerImage(), "ZK_IMAGE="+zkImage(), "PROMETHEUS_IMAGE="+promImage())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/build-images.sh %v: %v\n%s", what, err, out)
	}
	t.Logf("images %v ready in %v", what, time.Since(start).Round(100*time.Millisecond))
}

// reapStale removes the stacks of earlier runs whose process is gone (a run
// killed by go test's -timeout cannot tear down its own).
func reapStale(ctx context.Context, t *testing.T) {
	out, err := docker(ctx, "ps", "-a", "--filter", "label=com.docker.compose.project", "--format", `{{.Label "com.docker.compose.project"}}`)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, p := range strings.Fields(out) {
		pid, err := strconv.Atoi(strings.TrimPrefix(p, "snowfleet-it-"))
		if seen[p] || !strings.HasPrefix(p, "snowfleet-it-") || err != nil {
			continue
		}
		seen[p] = true
		if syscall.Kill(pid, 0) == nil {
			continue // a run in progress
		}
		t.Logf("removing the stale stack %s", p)
		if err := NewStack(t, p).Down(ctx); err != nil {
			t.Logf("remove %s: %v", p, err)
		}
	}
}

func dumpLogs(ctx context.Context, t *testing.T, st *Stack) {
	path := filepath.Join(os.TempDir(), st.Project+"-logs.txt")
	logs := st.Logs(ctx, 300)
	if err := os.WriteFile(path, []byte(logs), 0o644); err == nil {
		t.Logf("container logs (last 300 lines each) in %s", path)
	}
}

// toolAudit runs snowflakectl history export and audit over every ID the
// run collected, and fails t on any finding.
func toolAudit(ctx context.Context, t *testing.T, st *Stack, col *Collector) {
	ctl, err := BuildCtl(ctx, t.TempDir())
	if err != nil {
		t.Error(err)
		return
	}
	a, err := AuditWithTools(ctx, st, col, ctl, t.TempDir())
	if err != nil {
		t.Errorf("snowflakectl audit of the run's IDs: %v", err)
		return
	}
	t.Logf("snowflakectl audit of the run's IDs against the history: %s", a)
	if a.Findings() > 0 || a.Exit != 0 {
		t.Errorf("snowflakectl audit finds trouble in a correct fleet's IDs: %s", a)
	}
}
