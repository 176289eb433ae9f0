package coordinator

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
)

// ErrAuthFile: a ZooKeeper credentials file that cannot be used: missing,
// not a regular file, readable by others, or not one user:password line.
var ErrAuthFile = errors.New("bad zookeeper credentials file")

// ReadAuthFile reads ZooKeeper digest credentials, one line user:password
// (a trailing newline or CR, and blank lines, are ignored), from a file
// that others may not read, write or run (not checked on Windows, which has
// no such mode bits): the credentials are only as secret as the file, and
// an argument or environment variable is readable in ps and /proc.
func ReadAuthFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is not a regular file", ErrAuthFile, path)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o007 != 0 {
		return "", fmt.Errorf("%w: %s is accessible to others (mode %v); chmod o-rwx it", ErrAuthFile, path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSuffix(l, "\r"); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		return "", fmt.Errorf("%w: %s holds %d lines; want exactly one, user:password", ErrAuthFile, path, len(lines))
	}
	if _, _, err := zkconn.ParseAuth(lines[0]); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrAuthFile, path, err)
	}
	return lines[0], nil
}
