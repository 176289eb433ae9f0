// Package testenv is what a test needs from the machine beyond Go: a real
// ZooKeeper, redis-cli, curl, chromium, Docker. Require is the one place that
// decides whether a test that needs one runs, skips or fails:
//
//   - go test -short skips it, so that go test -short ./... passes on a
//     machine with only Go;
//   - without -short a missing tool fails the test, naming the package that
//     brings it (make deps installs them all): CI, which runs without
//     -short, skips nothing;
//   - a developer may opt out of a group with its SNOWFLEET_SKIP_* variable
//     (ZK, DOCKER, CLIENTS) set to 1; make check reports it at its end;
//   - with CI=true neither -short nor an opt-out may skip: the test fails.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ZooKeeperJar is the ZooKeeper server jar of Debian's zookeeper package,
// what integration/zktest runs.
const ZooKeeperJar = "/usr/share/java/zookeeper.jar"

// Python is the interpreter that has redis-py (Debian's python3-redis is
// importable by /usr/bin/python3 only).
const Python = "/usr/bin/python3"

// NodePath is where Debian's node-redis installs (node's NODE_PATH).
const NodePath = "/usr/share/nodejs"

// The opt-out variables, each for a group of requirements.
const (
	SkipZooKeeperEnv = "SNOWFLEET_SKIP_ZK"
	SkipDockerEnv    = "SNOWFLEET_SKIP_DOCKER"
	SkipClientsEnv   = "SNOWFLEET_SKIP_CLIENTS"
)

// requirement is one thing a test may need: how to tell it is missing, and
// the opt-out variable of its group ("" for none).
type requirement struct {
	missing func() []string // what is missing, with how to install it
	skipEnv string
}

func lookPath(bin, pkg string) func() []string {
	return func() []string {
		if _, err := exec.LookPath(bin); err != nil {
			return []string{bin + " (apt-get install " + pkg + ")"}
		}
		return nil
	}
}

func file(path, pkg string) []string {
	if _, err := os.Stat(path); err != nil {
		return []string{path + " (apt-get install " + pkg + ")"}
	}
	return nil
}

// lookup is the requirement called name; ok false for a name it does not
// know (a typo in a test, which fails it).
func lookup(name string) (r requirement, ok bool) {
	switch name {
	case "zookeeper":
		return requirement{skipEnv: SkipZooKeeperEnv, missing: func() []string {
			return append(lookPath("java", "default-jre-headless")(), file(ZooKeeperJar, "zookeeper")...)
		}}, true
	case "docker":
		return requirement{skipEnv: SkipDockerEnv, missing: func() []string {
			if err := exec.Command("docker", "info").Run(); err != nil {
				return []string{fmt.Sprintf("a usable Docker (docker info: %v; make deps starts dockerd)", err)}
			}
			return nil
		}}, true
	case "redis-cli":
		return requirement{skipEnv: SkipClientsEnv, missing: lookPath("redis-cli", "redis-tools")}, true
	case "haproxy":
		return requirement{skipEnv: SkipClientsEnv, missing: lookPath("haproxy", "haproxy")}, true
	case "redis-py":
		return requirement{skipEnv: SkipClientsEnv, missing: func() []string {
			if err := exec.Command(Python, "-c", "import redis").Run(); err != nil {
				return []string{Python + " with redis-py (apt-get install python3-redis)"}
			}
			return nil
		}}, true
	case "node-redis":
		return requirement{skipEnv: SkipClientsEnv, missing: func() []string {
			return append(lookPath("node", "nodejs")(), file(filepath.Join(NodePath, "redis", "package.json"), "node-redis")...)
		}}, true
	case "chromium":
		return requirement{missing: lookPath("chromium", "chromium")}, true
	case "curl":
		return requirement{skipEnv: SkipClientsEnv, missing: lookPath("curl", "curl")}, true
	case "promtool":
		return requirement{missing: lookPath("promtool", "prometheus")}, true
	}
	return requirement{}, false
}

// Require runs the test only if the machine has everything named; see the
// package comment for when it skips and when it fails.
func Require(t testing.TB, names ...string) {
	t.Helper()
	skip, fail := decide(names, testing.Short(), os.Getenv, lookup)
	switch {
	case fail != "":
		t.Fatalf("testenv: %s", fail)
	case skip != "":
		t.Skipf("testenv: %s", skip)
	}
}

// decide is Require's verdict: a reason to skip, or to fail, or neither.
func decide(names []string, short bool, getenv func(string) string, lookup func(string) (requirement, bool)) (skip, fail string) {
	ci := getenv("CI") == "true"
	var missing, optOuts []string
	for _, n := range names {
		r, ok := lookup(n)
		if !ok {
			return "", fmt.Sprintf("no requirement %q (a typo in the test?)", n)
		}
		switch {
		case r.skipEnv != "" && getenv(r.skipEnv) == "1" && ci:
			return "", fmt.Sprintf("%s=1 with CI=true: a test that needs %s may not skip in CI", r.skipEnv, n)
		case r.skipEnv != "" && getenv(r.skipEnv) == "1":
			return fmt.Sprintf("needs %s: skipped by request (%s=1)", n, r.skipEnv), ""
		case short && ci:
			return "", fmt.Sprintf("go test -short with CI=true: a test that needs %s may not skip in CI", n)
		case short:
			return fmt.Sprintf("needs %s: skipped under -short", n), ""
		}
		if m := r.missing(); len(m) > 0 {
			missing = append(missing, m...)
			if r.skipEnv != "" && !slices.Contains(optOuts, r.skipEnv) {
				optOuts = append(optOuts, r.skipEnv)
			}
		}
	}
	if len(missing) > 0 {
		optOut := ""
		if len(optOuts) > 0 {
			optOut = " (" + strings.Join(optOuts, "=1, ") + "=1 skips them instead)"
		}
		return "", fmt.Sprintf("needs %s; missing: %s. make deps installs them; go test -short skips such tests%s",
			strings.Join(names, ", "), strings.Join(missing, ", "), optOut)
	}
	return "", ""
}

// TestOnly panics unless the program is a test binary. The harnesses
// (integration/zktest, integration/fleettest, integration/faultproxy) start
// ZooKeeper servers, worker processes and fault proxies: Go has no test-only
// package, so each calls this where it starts one, and a test of the module
// (TestHarnessesOnlyInTests) fails when a non-test file imports them.
func TestOnly(pkg string) {
	if !testing.Testing() {
		panic(pkg + ": a test harness, used outside a test binary (go test); only _test.go files and the integration suite may import it")
	}
}

// DocNamesEveryFile fails t unless the doc.go of the package in the
// current directory (a test's own) names every file of the package, as go
// list sees it, and no file that is not there: a package's file map stays
// true as files come and go.
func DocNamesEveryFile(t *testing.T) {
	t.Helper()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	mapNamesEveryFile(t, "doc.go", string(doc))
}

// READMENamesEveryFile is DocNamesEveryFile for a package whose file map is
// a section of its README.md: the text under the heading (a whole line,
// such as "## How the server works") up to the next heading of its level
// or above.
func READMENamesEveryFile(t *testing.T, heading string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section, ok := markdownSection(string(readme), heading)
	if !ok {
		t.Fatalf("README.md has no heading %q, where its file map is", heading)
	}
	mapNamesEveryFile(t, "README.md under "+strconv.Quote(heading), section)
}

// markdownSection returns the lines under heading up to the next heading
// of the same level or above.
func markdownSection(text, heading string) (string, bool) {
	level := len(heading) - len(strings.TrimLeft(heading, "#"))
	lines := strings.Split(text, "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		return "", false
	}
	var b strings.Builder
	for _, l := range lines[start+1:] {
		if h := len(l) - len(strings.TrimLeft(l, "#")); h > 0 && h <= level && strings.HasPrefix(l[h:], " ") {
			break
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), true
}

// mapNamesEveryFile fails t unless text (what where names) names every
// non-test Go file of the package in the current directory, for any
// operating system, and no other Go file of its own.
func mapNamesEveryFile(t *testing.T, where, text string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command lists the package's files: %v", err)
	}
	// IgnoredGoFiles: a file built only elsewhere (loop_other.go) is the
	// package's too.
	out, err := exec.Command(goTool, "list", "-f", `{{join .GoFiles " "}} {{join .IgnoredGoFiles " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasSuffix(f, "_test.go") {
			files = append(files, f)
		}
	}
	// A name after a slash is another package's file (resp/doc.go).
	named := map[string]bool{}
	for _, m := range regexp.MustCompile(`(/?)\b([a-z0-9_]+\.go)\b`).FindAllStringSubmatch(text, -1) {
		if m[1] == "" && !strings.HasSuffix(m[2], "_test.go") {
			named[m[2]] = true
		}
	}
	for _, f := range files {
		if f != "doc.go" && !named[f] {
			t.Errorf("the file map in %s does not name %s", where, f)
		}
	}
	for f := range named {
		if !slices.Contains(files, f) {
			t.Errorf("the file map in %s names %s, which is not a file of the package", where, f)
		}
	}
}

// Module is this module's import path, with its trailing slash.
const Module = "github.com/snowfleet/snowfleet/"

// ModuleDeps is the packages of this module that pkg (an import path, or a
// directory such as ".") is built from, its non-test imports transitively
// and itself, as go list -deps names them.
func ModuleDeps(t *testing.T, pkg string) []string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command lists %s's imports: %v", pkg, err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	var ours []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, Module) {
			ours = append(ours, p)
		}
	}
	return ours
}

// WriteFile writes data to dir/name with mode (set again with chmod, past
// the umask: a test of a file's mode bits gets the bits it asks for), and
// returns its path.
func WriteFile(t *testing.T, dir, name, data string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}
