//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The mutation proof (make integration-mutants): for each deliberately
// broken worker (integration/mutants/<name>.patch, applied to a scratch copy
// of the tree to build image snowfleet/snowflaked:mutant-<name>), a
// fleet of it runs the scenarios that exercise the broken rule, with the
// same checks as TestFleet; the mutant must be caught by one of the checks
// that guard that rule. A mutant no check catches, or one caught only by
// unrelated checks (a timing bound on a loaded machine, say), fails.

// mutantCase is one mutant: the scenarios (their letters) that exercise
// its rule, and the checks that guard the rule (substrings of their
// failure messages).
type mutantCase struct {
	name      string
	scenarios []string
	guards    []string
	// issuesWrong: its scenarios make it issue an ID twice or start a
	// tenure inside another, so snowflakectl audit must find it from the
	// IDs and the history alone (the others break a rule without a wrong
	// ID in these scenarios: what audit reports of them is logged).
	issuesWrong bool
}

func mutantCases() []mutantCase {
	return []mutantCase{
		{name: "nofloor", scenarios: []string{"c", "d"}, issuesWrong: true,
			guards: []string{"duplicate", "hand-over", "floor", "two holders", "audit finds"}},
		{name: "noceiling", scenarios: []string{"d", "k"}, issuesWrong: true,
			guards: []string{"duplicate", "ceiling", "still serves", "audit finds"}},
		{name: "bareset", scenarios: []string{"o"},
			guards: []string{"drops the deleted lease", "which ZooKeeper does not list", "two holders", "duplicate", "audit finds"}},
		{name: "norelease", scenarios: []string{"h"},
			guards: []string{"the release did not lower the reservation"}},
		{name: "dupbatch", scenarios: []string{"e"}, issuesWrong: true,
			guards: []string{"duplicate", "protocol", "audit finds"}},
		{name: "markerfirst", scenarios: []string{"r2"},
			guards: []string{"wrote its marker", "claimed before recover finished", "duplicate", "audit finds"}},
		{name: "seqonly", scenarios: []string{"r3"},
			guards: []string{"claimed before recover finished", "waits for recover", "duplicate", "audit finds"}},
		{name: "clockback", scenarios: []string{"g2l", "g2"}, issuesWrong: true,
			guards: []string{"duplicate", "did not increase", "protocol", "CLOCKBACK", "audit finds"}},
	}
}

// mutantImage is the image of the mutant name: the chaos build of the tree
// with its patch applied (deploy/build-images.sh mutant-<name>).
func mutantImage(name string) string {
	return envOr("MUTANT_IMAGE", "snowfleet/snowflaked:mutant") + "-" + name
}

// Every patch in integration/mutants is a case of the proof, and every case
// has its patch: a patch added without its scenarios and guards, or a case
// whose patch was removed, would prove nothing.
func TestMutantPatches(t *testing.T) {
	patches, err := filepath.Glob(filepath.Join("mutants", "*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range patches {
		names = append(names, strings.TrimSuffix(filepath.Base(p), ".patch"))
	}
	var cases []string
	for _, mc := range mutantCases() {
		cases = append(cases, mc.name)
	}
	slices.Sort(names)
	slices.Sort(cases)
	if !slices.Equal(names, cases) {
		t.Errorf("integration/mutants/*.patch are %q; mutantCases are %q", names, cases)
	}
}

func TestMutants(t *testing.T) {
	// Nightly-sized: not part of make integration (nor make check).
	if os.Getenv("SNOWFLEET_MUTANTS") != "1" {
		t.Skip("the mutation proof runs with make integration-mutants (SNOWFLEET_MUTANTS=1)")
	}
	requireDocker(t)
	redis.SetLogger(quietRedis{})
	ctx := context.Background()
	reapStale(ctx, t)
	buildImages(t, "zookeeper", "prometheus") // every scenario waits for its targets in Prometheus
	start := time.Now()
	ctl, err := BuildCtl(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var summary []string
	for _, mc := range mutantCases() {
		t.Run(mc.name, func(t *testing.T) {
			began := time.Now()
			caught := runMutant(ctx, t, mc, ctl)
			line := fmt.Sprintf("%s (%s, %v): ", mc.name, strings.Join(mc.scenarios, ", "), time.Since(began).Round(time.Second))
			if len(caught) == 0 {
				line += "NOT CAUGHT"
			} else {
				line += "caught by: " + strings.Join(caught, "; ")
			}
			summary = append(summary, line)
		})
	}
	t.Logf("mutation proof in %v:\n%s", time.Since(start).Round(time.Second), strings.Join(summary, "\n"))
}

// runMutant runs mc's scenarios against a fleet of its workers and returns
// the guarding checks that failed (deduplicated, shortened); it fails t
// when none did.
func runMutant(ctx context.Context, t *testing.T, mc mutantCase, ctl string) []string {
	if os.Getenv("SNOWFLEET_IT_NO_BUILD") != "1" || exec.Command("docker", "image", "inspect", mutantImage(mc.name)).Run() != nil {
		buildImages(t, "mutant-"+mc.name)
	}
	st := NewStack(t, fmt.Sprintf("snowfleet-it-%d", os.Getpid()))
	st.env = append(st.env, "WORKER_IMAGE="+mutantImage(mc.name))
	t.Cleanup(func() {
		if t.Failed() {
			dumpLogs(ctx, t, st)
		}
		if err := st.Down(ctx); err != nil {
			t.Errorf("tear down %s: %v", st.Project, err)
		}
	})
	if err := st.Up(ctx, 3); err != nil {
		t.Fatalf("stack up: %v", err)
	}
	// dupbatch serves single IDs correctly: the fleet comes up.
	if _, err := WaitServing(ctx, st, 3, 90*time.Second); err != nil {
		t.Fatalf("stack up: %v", err)
	}
	requireMutant(ctx, t, st, mc.name)
	// d waits for Prometheus's alerts, and every scenario for its targets.
	prom, err := StartPrometheus(ctx, st, t.TempDir())
	if err != nil {
		t.Fatalf("prometheus: %v", err)
	}
	col := StartCollector(ctx, st, t.Logf)
	t.Cleanup(col.Stop)
	mon := StartMonitor(ctx, st)
	t.Cleanup(mon.Stop)
	_ = sleep(ctx, 3*time.Second)

	rec := &recorder{TB: t, scenario: "the calm start"}
	prev := Check(ctx, st, col, mon, time.Now().Add(-time.Second))
	if prev.Duplicates > 0 {
		rec.Errorf("%d duplicate IDs", prev.Duplicates)
	}
	for _, p := range prev.Problems {
		rec.Errorf("invariant: %s", p)
	}
	col.TakeErrors()
	su := &suite{ctx: ctx, st: st, col: col, mon: mon, prom: prom, prev: prev}
	ran := 0
	for _, sc := range scenarios() {
		if !slices.Contains(mc.scenarios, sc.letter) {
			continue
		}
		ran++
		rec.scenario = sc.name()
		rec.runScenario(func() { su.run(rec, sc) })
	}
	if ran != len(mc.scenarios) {
		t.Fatalf("%d of the scenarios %q exist", ran, mc.scenarios)
	}
	mon.Stop()
	col.Stop()
	rec.scenario = "after the last scenario"
	for _, p := range Check(ctx, st, col, mon, time.Now()).Problems {
		rec.Errorf("invariant: %s", p)
	}
	auditMutant(ctx, t, rec, st, col, mc, ctl)
	guarded, other := rec.split(mc.guards)
	for _, m := range other {
		t.Logf("also failed (not a check of %s's rule): %s", mc.name, m)
	}
	switch {
	case len(guarded) > 0:
		t.Logf("MUTANT %s CAUGHT by: %s", mc.name, strings.Join(guarded, "; "))
	case len(other) > 0:
		t.Errorf("mutant %s was caught only by checks unrelated to its rule (want one of %q): not a proof", mc.name, mc.guards)
	default:
		t.Errorf("mutant %s passed every check of %q: the suite cannot tell it from a correct worker", mc.name, mc.scenarios)
	}
	return guarded
}

// auditMutant runs the operator's audit (snowflakectl history export, then
// audit --history) over every ID the run collected: its findings are
// recorded as a check of the mutant's rule. It fails t when the suite's
// own checks found IDs issued twice that audit does not, or when a mutant
// that issues wrong IDs leaves audit finding nothing: the audit must see
// from the IDs and the history alone what the suite sees knowing who
// served what.
func auditMutant(ctx context.Context, t *testing.T, rec *recorder, st *Stack, col *Collector, mc mutantCase, ctl string) {
	rec.mu.Lock()
	suiteSawDups := slices.ContainsFunc(rec.failures, func(f string) bool { return strings.Contains(f, "duplicate") })
	rec.mu.Unlock()
	rec.scenario = "snowflakectl audit"
	a, err := AuditWithTools(ctx, st, col, ctl, t.TempDir())
	if err != nil {
		t.Errorf("snowflakectl audit of the run's IDs: %v", err)
		return
	}
	t.Logf("snowflakectl audit of the run's IDs against the history: %s", a)
	if a.Findings() > 0 {
		rec.Errorf("audit finds %d issued twice, %d in no tenure, %d overlapping tenures", a.DuplicateIDs, a.NoTenureIDs, a.Overlaps)
	}
	switch {
	case suiteSawDups && a.DuplicateIDs == 0:
		t.Errorf("the suite found IDs issued twice; snowflakectl audit of the same IDs found none: %s", a)
	case mc.issuesWrong && a.Findings() == 0:
		t.Errorf("mutant %s issues wrong IDs, and snowflakectl audit found nothing from the IDs and the history: %s", mc.name, a)
	}
}

// requireMutant fails unless every worker runs from an image built from
// the mutant's patch (its snowfleet.mutant label): a worker of another
// image would pass for a proof.
func requireMutant(ctx context.Context, t *testing.T, st *Stack, name string) {
	t.Helper()
	ws, err := st.Workers(ctx)
	if err != nil {
		t.Fatalf("list workers: %v", err)
	}
	for _, w := range ws {
		out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", `{{index .Config.Labels "snowfleet.mutant"}}`, w.ID).CombinedOutput()
		if err != nil {
			t.Fatalf("inspect %s: %v: %s", w.Short(), err, out)
		}
		if got := strings.TrimSpace(string(out)); got != name {
			t.Fatalf("%s runs mutant %q, not %s: build %s with deploy/build-images.sh mutant-%s", w.Short(), got, name, mutantImage(name), name)
		}
	}
}

// buildImages runs deploy/build-images.sh what (a mutant's image, or
// ZooKeeper's and Prometheus's brought up to date).
func buildImages(t *testing.T, what ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command(filepath.Join("..", "deploy", "build-images.sh"), what...)
	cmd.Env = append(os.Environ(), "MUTANT_IMAGE="+envOr("MUTANT_IMAGE", "snowfleet/snowflaked:mutant"), "ZK_IMAGE="+zkImage(), "PROMETHEUS_IMAGE="+promImage())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/build-images.sh %v: %v\n%s", what, err, out)
	}
	t.Logf("images %v ready in %v", what, time.Since(start).Round(100*time.Millisecond))
}

// recorder is the testing.TB a scenario gets in the mutation proof: a
// failed check is recorded (and logged), not failed, since a mutant must
// fail checks; Fatal ends the scenario (runScenario recovers it) and the
// proof goes on with the next.
type recorder struct {
	testing.TB
	scenario string
	mu       sync.Mutex
	failures []string // "scenario: message"
	cleanups []func() // the running scenario's, run at its end
}

// stopScenario is what Fatal panics with, for runScenario to recover.
type stopScenario struct{}

func (r *recorder) add(msg string) {
	r.mu.Lock()
	r.failures = append(r.failures, r.scenario+": "+msg)
	r.mu.Unlock()
	r.TB.Logf("check failed (%s): %s", r.scenario, msg)
}

func (r *recorder) Error(a ...any)                 { r.add(fmt.Sprint(a...)) }
func (r *recorder) Errorf(format string, a ...any) { r.add(fmt.Sprintf(format, a...)) }
func (r *recorder) Fail()                          { r.add("failed") }
func (r *recorder) FailNow()                       { r.Fail(); panic(stopScenario{}) }
func (r *recorder) Fatal(a ...any)                 { r.add(fmt.Sprint(a...)); panic(stopScenario{}) }
func (r *recorder) Fatalf(format string, a ...any) {
	r.add(fmt.Sprintf(format, a...))
	panic(stopScenario{})
}

// Failed is whether this scenario failed a check (the report row's mark).
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.ContainsFunc(r.failures, func(f string) bool { return strings.HasPrefix(f, r.scenario+": ") })
}

// Cleanup runs f at the end of the running scenario, as a subtest's would
// at the end of TestFleet's scenario (placeholders, a clock put right).
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// runScenario runs f, ending quietly at a Fatal of the recorder, then the
// scenario's cleanups, last first.
func (r *recorder) runScenario(f func()) {
	defer func() {
		for i := len(r.cleanups) - 1; i >= 0; i-- {
			r.cleanups[i]()
		}
		r.cleanups = nil
	}()
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stopScenario); !ok {
				panic(v)
			}
		}
	}()
	f()
}

// split divides the recorded failures into those of a guarding check and
// the others. Failures of one check (the same message but for its numbers:
// one per ID above a ceiling, say) are listed once, the first shortened,
// with their count.
func (r *recorder) split(guards []string) (guarded, other []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	digits := regexp.MustCompile(`[0-9]+`) // what differs between two failures of one check
	var keys []string
	first, count := map[string]string{}, map[string]int{}
	for _, f := range r.failures {
		k := digits.ReplaceAllString(f, "N")
		if count[k] == 0 {
			keys = append(keys, k)
			first[k] = f
		}
		count[k]++
	}
	for _, k := range keys {
		f := first[k]
		short := f
		if len(short) > 160 {
			short = short[:160] + "…"
		}
		if count[k] > 1 {
			short += fmt.Sprintf(" (×%d)", count[k])
		}
		if slices.ContainsFunc(guards, func(g string) bool { return strings.Contains(f, g) }) {
			guarded = append(guarded, short)
		} else {
			other = append(other, short)
		}
	}
	return guarded, other
}
