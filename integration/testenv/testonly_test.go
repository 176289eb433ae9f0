package testenv

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// harnesses are the packages that start ZooKeeper servers, workers and
// fault proxies for tests (each calls TestOnly).
var harnesses = []string{
	"github.com/snowfleet/snowfleet/integration/zktest",
	"github.com/snowfleet/snowfleet/integration/fleettest",
	"github.com/snowfleet/snowfleet/integration/faultproxy",
}

// testPlace is where non-test files may import the harnesses: the
// harnesses themselves and the integration suite (build tag integration).
const testPlace = "github.com/snowfleet/snowfleet/integration"

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = "../.." // the module's root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestHarnessesOnlyInTests fails when a package's non-test files import a
// harness, outside integration/, or when a daemon's build depends on one:
// TestOnly would panic there at run time, this says so at test time.
func TestHarnessesOnlyInTests(t *testing.T) {
	testImports := 0
	for _, tags := range []string{"", "chaos", "sim", "integration"} {
		for _, line := range goList(t, "-tags", tags, "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...") {
			path, rest, _ := strings.Cut(line, "|")
			imports, tests, _ := strings.Cut(rest, "|")
			for _, h := range harnesses {
				if slices.Contains(strings.Fields(tests), h) {
					testImports++
				}
				if path == testPlace || strings.HasPrefix(path, testPlace+"/") {
					continue
				}
				if slices.Contains(strings.Fields(imports), h) {
					t.Errorf("%s (tags %q) imports %s in a non-test file: only _test.go files and integration/ may", path, tags, h)
				}
			}
		}
	}
	// The listing must have seen the tests that do import them, else it
	// checked nothing.
	if testImports == 0 {
		t.Fatal("go list found no test importing a harness: the check read nothing")
	}
	for _, tags := range []string{"", "chaos"} {
		deps := goList(t, "-tags", tags, "-deps", "./cmd/snowflaked", "./cmd/snowflakectl", "./cmd/idlease-example")
		if !slices.Contains(deps, "github.com/snowfleet/snowfleet/coordinator") {
			t.Fatalf("go list -deps of the daemons (tags %q) lacks the coordinator: the check read nothing (%d packages)", tags, len(deps))
		}
		for _, h := range append(harnesses, testPlace+"/testenv") {
			if slices.Contains(deps, h) {
				t.Errorf("the daemons (tags %q) depend on %s", tags, h)
			}
		}
	}
}
