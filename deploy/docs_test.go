package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// These tests keep the docs true about the repository's own tools: the make
// targets they name, the environment variables the code reads, and what
// make check reports it skipped.

// tracked lists the repository's tracked files matching the git pathspecs.
func tracked(t *testing.T, specs ...string) []string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", "..", "ls-files", "--"}, specs...)...).Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		files = append(files, filepath.Join("..", f))
	}
	return files
}

func read(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docs is every tracked Markdown file's text, by file.
func docs(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range tracked(t, "*.md") {
		out[f] = read(t, f)
	}
	if len(out) < 5 {
		t.Fatalf("%d Markdown files", len(out))
	}
	return out
}

// makeTargets are the Makefile's targets.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	targets := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-z][a-z0-9_-]*):`).FindAllStringSubmatch(read(t, "../Makefile"), -1) {
		targets[m[1]] = true
	}
	if !targets["check"] || !targets["test"] {
		t.Fatalf("Makefile targets %v: the parsing no longer matches", targets)
	}
	return targets
}

var (
	codeSpanRE = regexp.MustCompile("`([^`\n]+)`")
	// makeCmd is a make command line: optional VAR=value words, make, then
	// its targets (words until anything else).
	makeCmd = regexp.MustCompile(`(?:^|[;&|(]\s*|^\$ )(?:[A-Z_]+=\S*\s+)*make((?:\s+[a-z][a-z0-9_-]*)+)`)
)

// TestMakeTargetsNamedExist: every `make <target>` the docs (a code span,
// or a line of a code block) and the Makefile's own comments name is a
// target of the Makefile.
func TestMakeTargetsNamedExist(t *testing.T) {
	targets := makeTargets(t)
	texts := docs(t)
	var mk []string
	for _, l := range strings.Split(read(t, "../Makefile"), "\n") {
		if c, ok := strings.CutPrefix(strings.TrimSpace(l), "#"); ok {
			mk = append(mk, c)
		}
	}
	texts["../Makefile"] = strings.Join(mk, "\n")
	named := 0
	for file, text := range texts {
		var candidates []string
		fence := false
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				fence = !fence
				continue
			}
			if fence {
				candidates = append(candidates, strings.TrimSpace(l))
				continue
			}
			for _, m := range codeSpanRE.FindAllStringSubmatch(l, -1) {
				candidates = append(candidates, strings.TrimSpace(m[1]))
			}
		}
		for _, c := range candidates {
			for _, m := range makeCmd.FindAllStringSubmatch(c, -1) {
				for _, target := range strings.Fields(m[1]) {
					named++
					if !targets[target] {
						t.Errorf("%s: %q names make target %q, which the Makefile does not have", file, c, target)
					}
				}
			}
		}
	}
	if named < 10 {
		t.Fatalf("found %d make targets named in the docs: the pattern no longer matches how they write them", named)
	}
	t.Logf("%d make targets named", named)
}

var envName = `((?:SNOWFLEET|SNOWFLAKE)_[A-Z0-9_]*[A-Z0-9])`

// envReads are the SNOWFLEET_* and SNOWFLAKE_* variables the code reads
// from the environment, each with a file that reads it: Go (os.Getenv,
// os.LookupEnv, and the *Env constants handed to them), shell scripts and
// the Makefile (a reference that no script assigns first), the compose
// files (${VAR...}). The SNOWFLAKE_<FLAG> variables snowflaked and
// snowflakectl read through their flags are the flags tables' business.
func envReads(t *testing.T) map[string]string {
	t.Helper()
	reads := map[string]string{}
	add := func(name, file string) {
		if _, ok := reads[name]; !ok {
			reads[name] = file
		}
	}
	goRead := regexp.MustCompile(`(?:Getenv|LookupEnv)\("` + envName + `"\)|\w+Env\s*=\s*"` + envName + `"`)
	for _, f := range tracked(t, "*.go") {
		for _, m := range goRead.FindAllStringSubmatch(read(t, f), -1) {
			add(m[1]+m[2], f)
		}
	}
	shellRef := regexp.MustCompile(`\$\$?\{?` + envName)
	assigned := regexp.MustCompile(`(?m)^\s*(?:export\s+|local\s+|readonly\s+)?` + envName + `=(.*)$`)
	shells := append(tracked(t, "*.sh", ".ci/*", "integration/mutants/*.sh"), "../Makefile")
	set := map[string]bool{} // assigned by a script without reading a value given
	for _, f := range shells {
		for _, m := range assigned.FindAllStringSubmatch(read(t, f), -1) {
			if !strings.Contains(m[2], m[1]) {
				set[m[1]] = true
			}
		}
	}
	for _, f := range shells {
		for _, m := range shellRef.FindAllStringSubmatch(read(t, f), -1) {
			if !set[m[1]] {
				add(m[1], f)
			}
		}
	}
	composeRef := regexp.MustCompile(`\$\{` + envName)
	for _, f := range tracked(t, "*.yml", "*.yaml") {
		for _, m := range composeRef.FindAllStringSubmatch(read(t, f), -1) {
			add(m[1], f)
		}
	}
	if len(reads) < 5 {
		t.Fatalf("found %d variables read: the patterns no longer match the code", len(reads))
	}
	return reads
}

// TestEnvVarsDocumented: every SNOWFLEET_* and SNOWFLAKE_* variable the code
// reads from the environment is named in a README (or another tracked
// Markdown file).
func TestEnvVarsDocumented(t *testing.T) {
	var all strings.Builder
	for _, text := range docs(t) {
		all.WriteString(text)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile(envName).FindAllStringSubmatch(all.String(), -1) {
		documented[m[1]] = true
	}
	reads := envReads(t)
	var names []string
	for n := range reads {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !documented[n] {
			t.Errorf("%s is read (%s) and named in no Markdown file", n, strings.TrimPrefix(reads[n], "../"))
		}
	}
	t.Logf("%d variables read: %v", len(names), names)
}

// checkReport is the last command of make check's recipe: the line that
// says what was skipped, as the shell runs it.
func checkReport(t *testing.T) string {
	t.Helper()
	mk := read(t, "../Makefile")
	i := strings.Index(mk, "\ncheck:")
	if i < 0 {
		t.Fatal("the Makefile has no check target")
	}
	var recipe []string
	for _, l := range strings.Split(mk[i+1:], "\n")[1:] {
		if !strings.HasPrefix(l, "\t") {
			break
		}
		recipe = append(recipe, strings.TrimPrefix(l, "\t"))
	}
	// The last command: its lines joined where they end in a backslash.
	var cmds []string
	cur := ""
	for _, l := range recipe {
		cur += l
		if strings.HasSuffix(cur, "\\") {
			cur = strings.TrimSuffix(cur, "\\") + "\n"
			continue
		}
		cmds = append(cmds, cur)
		cur = ""
	}
	if len(cmds) == 0 {
		t.Fatal("make check has an empty recipe")
	}
	last := strings.TrimLeft(cmds[len(cmds)-1], "@-+")
	return strings.ReplaceAll(last, "$$", "$")
}

// TestCheckReportsEverySkip: for every SNOWFLEET_SKIP_* switch the code
// reads, make check's last line, run with that switch set to 1, says
// something was skipped and names the switch; with none set it says nothing
// was skipped.
func TestCheckReportsEverySkip(t *testing.T) {
	report := checkReport(t)
	run := func(env ...string) string {
		t.Helper()
		cmd := exec.Command("sh", "-c", report)
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, "SNOWFLEET_SKIP_") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("make check's report with %v: %v\n%s", env, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := run(); !strings.Contains(out, "nothing skipped") {
		t.Errorf("make check's report with no switch set: %q, want it to say nothing skipped", out)
	}
	var switches []string
	for n := range envReads(t) {
		if strings.HasPrefix(n, "SNOWFLEET_SKIP_") {
			switches = append(switches, n)
		}
	}
	slices.Sort(switches)
	if len(switches) < 3 {
		t.Fatalf("skip switches %v: the code reads SNOWFLEET_SKIP_ZK, _DOCKER and _CLIENTS at least", switches)
	}
	for _, s := range switches {
		out := run(s + "=1")
		if strings.Contains(out, "nothing skipped") || !strings.Contains(out, s+"=1") {
			t.Errorf("make check's report with %s=1: %q, want it to name %s=1 as skipped", s, out, s)
		}
	}
	t.Logf("switches %v", switches)
}
