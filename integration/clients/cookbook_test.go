//go:build linux

package clients

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCookbookPrintsWhatRuns: the cookbook's Python and Node.js snippets
// are the files the draws above run, word for word, so the docs cannot
// drift from what was tested.
func TestCookbookPrintsWhatRuns(t *testing.T) {
	dir := cookbook(t)
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"nextids.py", "nextids.js", "ids_http.py", "ids_http.js"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(readme), strings.TrimRight(string(b), "\n")+"\n```") {
			t.Errorf("worker/cookbook/README.md does not print %s as it is: copy the file into its code block", f)
		}
	}
}
