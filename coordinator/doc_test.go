package coordinator

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// doc.go's file map names every file of the package, as go list sees it,
// and no file that is not there.
func TestDocNamesEveryFile(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command lists the package's files: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-f", `{{join .GoFiles " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	files := strings.Fields(string(out))
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`\b[a-z0-9_]+\.go\b`).FindAllString(string(doc), -1)
	for _, f := range files {
		if f != "doc.go" && !slices.Contains(named, f) {
			t.Errorf("doc.go's file map does not name %s", f)
		}
	}
	for _, f := range named {
		if !slices.Contains(files, f) {
			t.Errorf("doc.go names %s, which is not a file of the package", f)
		}
	}
}
