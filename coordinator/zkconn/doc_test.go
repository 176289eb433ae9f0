package zkconn

import (
	"testing"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// doc.go's file map names every file of the package, and no other.
func TestDocNamesEveryFile(t *testing.T) { testenv.DocNamesEveryFile(t) }
