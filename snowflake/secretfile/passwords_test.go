package secretfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

func TestReadPasswords(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, data string, mode os.FileMode) string {
		return testenv.WriteFile(t, dir, name, data, mode)
	}
	pws, err := ReadPasswords(write("two", "old password 0001\r\n\nnew-password-00002\n", 0o600))
	if err != nil || len(pws) != 2 || string(pws[0]) != "old password 0001" || string(pws[1]) != "new-password-00002" {
		t.Fatalf("two passwords: %q, %v", pws, err)
	}
	for name, c := range map[string]struct {
		path string
		want string
	}{
		"missing":        {filepath.Join(dir, "nope"), "no such file"},
		"empty":          {write("empty", "\n\n", 0o600), "holds no password"},
		"three":          {write("three", strings.Repeat("a-long-password-123\n", 3), 0o600), "holds 3 passwords"},
		"world-readable": {write("world", "a\n", 0o644), "accessible to others (mode -rw-r--r--)"},
		"short":          {write("short", "a-long-password-123\ns3cret\n", 0o600), "password 2 of 2 is 6 bytes; at least 16"},
		"directory":      {dir, "not a regular file"},
	} {
		_, err := ReadPasswords(c.path)
		if !errors.Is(err, ErrPasswordFile) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want ErrPasswordFile saying %q", name, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error spans lines: %q", name, err)
		}
	}
}
