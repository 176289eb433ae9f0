package zkconn

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

func TestReadAuthFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		return testenv.WriteFile(t, dir, name, data, mode)
	}
	good := write("good", "fleet:s3cret-pass-0123\n", 0o600)
	if got, err := ReadAuthFile(good); err != nil || got != "fleet:s3cret-pass-0123" {
		t.Fatalf("ReadAuthFile(good) = %q, %v", got, err)
	}
	for name, c := range map[string]struct {
		data string
		mode os.FileMode
		want string
	}{
		"world": {"fleet:pw\n", 0o644, "accessible to others"},
		"empty": {"\n", 0o600, "0 lines"},
		"two":   {"a:b\nc:d\n", 0o600, "2 lines"},
		"bad":   {"nocolon\n", 0o600, "want user:password"},
		"short": {"fleet:s3cret-pass\n", 0o600, "password is 11 bytes; at least 16"},
		"one":   {"fleet:x\n", 0o600, "password is 1 bytes; at least 16"},
	} {
		_, err := ReadAuthFile(write(name, c.data, c.mode))
		if !errors.Is(err, ErrAuthFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrAuthFile saying %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw") && name == "world" {
			t.Errorf("%s: the error shows the secret: %v", name, err)
		}
	}
	if _, err := ReadAuthFile(filepath.Join(dir, "missing")); !errors.Is(err, ErrAuthFile) {
		t.Errorf("missing file: %v", err)
	}
}
