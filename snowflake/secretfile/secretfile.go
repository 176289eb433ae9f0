// Package secretfile reads the files that hold secrets: a ZooKeeper
// identity (coordinator/zkconn) and the passwords of the ID port and of IDs
// over HTTP (worker, snowflaked, snowflakectl secure). A secret is only as
// secret as its file, so every one is read through Lines, which refuses a
// file others may read, write or run; an argument or an environment
// variable would be readable in ps and /proc. A leaf: it imports nothing of
// ours, so snowflakectl reads a password file without linking the worker.
package secretfile

import (
	"fmt"
	"os"
	"runtime"
	"strings"
)

// Lines reads a secret file's lines, a trailing CR trimmed and blank lines
// left out. A file that is not a regular file, or that others may read,
// write or run (not checked on Windows, which has no such mode bits), is
// refused with an error naming it.
func Lines(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o007 != 0 {
		return nil, fmt.Errorf("%s is accessible to others (mode %v); chmod o-rwx it", path, st.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSuffix(l, "\r"); l != "" {
			lines = append(lines, l)
		}
	}
	return lines, nil
}
