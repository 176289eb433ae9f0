package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// Stdin from /dev/null (a character device, as a terminal is) is no
// terminal: repair and recover refuse with exit 2 and name --yes, as the
// README says, before they dial ZooKeeper (the address here answers
// nothing, so a prompt or a dial would show as another exit).
func TestDevNullIsNoTerminal(t *testing.T) {
	t.Parallel()
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := inputFrom(f)
	if in.terminal {
		t.Fatalf("inputFrom(%s).terminal = true", os.DevNull)
	}
	zk := []string{"--zk", "127.0.0.1:1", "--zk-root", "/devnull-test", "--timeout", "1s"}
	for _, tc := range []struct {
		name string
		run  func(stdout, stderr *bytes.Buffer) int
	}{
		{"repair", func(o, e *bytes.Buffer) int { return runRepair(append(zk, "--slot", "dc03-m04"), in, o, e) }},
		{"recover", func(o, e *bytes.Buffer) int { return runRecover(zk, in, o, e) }},
	} {
		var out, errb bytes.Buffer
		rc := tc.run(&out, &errb)
		if rc != exitUsage || !strings.Contains(errb.String(), errNoTerminal.Error()) {
			t.Errorf("%s with stdin from %s: rc %d, stderr %q; want %d and %q", tc.name, os.DevNull, rc, errb.String(), exitUsage, errNoTerminal)
		}
		if strings.Contains(out.String(), "[y/N]") {
			t.Errorf("%s with stdin from %s asked: %q", tc.name, os.DevNull, out.String())
		}
	}
}
