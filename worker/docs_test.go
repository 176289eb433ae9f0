package worker

import (
	"testing"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// README.md's file map names every file of the package, and no other.
func TestREADMENamesEveryFile(t *testing.T) {
	t.Parallel()
	testenv.READMENamesEveryFile(t, "## How the server works")
}
