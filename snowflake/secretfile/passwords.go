package secretfile

import (
	"errors"
	"fmt"
)

// ErrPasswordFile: a password file is missing, unreadable, empty, holds
// more than MaxPasswords, or can be read by others.
var ErrPasswordFile = errors.New("bad password file")

// MaxPasswords is how many passwords a password file may hold: the current
// one and, during a rotation, the next.
const MaxPasswords = 2

// MinPasswordLen is the shortest password a password file may hold. The
// password is for programs, never typed by a person, so length costs
// nothing, and a short one falls to guessing (a connection per three
// tries still makes thousands a second): refused at start rather than
// warned about, since a warning in a log is read after the fact.
const MinPasswordLen = 16

// ReadPasswords reads one password per line (at most MaxPasswords; blank
// lines and a trailing CR are ignored). A file others may read, write or
// run is refused (not on Windows, which has no such mode bits): a password
// is only as secret as its file.
func ReadPasswords(path string) ([][]byte, error) {
	lines, err := Lines(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPasswordFile, err)
	}
	pws := make([][]byte, len(lines))
	for i, l := range lines {
		pws[i] = []byte(l)
	}
	for i, pw := range pws {
		if len(pw) < MinPasswordLen {
			return nil, fmt.Errorf("%w: %s: password %d of %d is %d bytes; at least %d (say, openssl rand -base64 24)",
				ErrPasswordFile, path, i+1, len(pws), len(pw), MinPasswordLen)
		}
	}
	switch {
	case len(pws) == 0:
		return nil, fmt.Errorf("%w: %s holds no password", ErrPasswordFile, path)
	case len(pws) > MaxPasswords:
		return nil, fmt.Errorf("%w: %s holds %d passwords; at most %d, one per line (the current one and, while rotating, the next)",
			ErrPasswordFile, path, len(pws), MaxPasswords)
	}
	return pws, nil
}
