package zkconn

import (
	"errors"
	"fmt"

	"github.com/snowfleet/snowfleet/snowflake/secretfile"
)

// ErrAuthFile: a ZooKeeper credentials file that cannot be used: missing,
// not a regular file, readable by others, not one user:password line, or
// a password shorter than secretfile.MinPasswordLen (a digest identity
// guards the whole fleet's tree: the ID port's rule applies).
var ErrAuthFile = errors.New("bad zookeeper credentials file")

// ReadAuthFile reads ZooKeeper digest credentials, one line user:password
// (a trailing newline or CR, and blank lines, are ignored), from a file
// that others may not read, write or run (not checked on Windows, which has
// no such mode bits): the credentials are only as secret as the file, and
// an argument or environment variable is readable in ps and /proc.
func ReadAuthFile(path string) (string, error) {
	lines, err := secretfile.Lines(path)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrAuthFile, err)
	}
	if len(lines) != 1 {
		return "", fmt.Errorf("%w: %s holds %d lines; want exactly one, user:password", ErrAuthFile, path, len(lines))
	}
	_, pw, err := ParseAuth(lines[0])
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrAuthFile, path, err)
	}
	if len(pw) < secretfile.MinPasswordLen {
		return "", fmt.Errorf("%w: %s: the password is %d bytes; at least %d, as the ID port's (say, user:$(openssl rand -hex 24))",
			ErrAuthFile, path, len(pw), secretfile.MinPasswordLen)
	}
	return lines[0], nil
}
