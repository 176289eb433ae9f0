package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --zk-auth-file: the credentials come from a file with the password
// file's checks, never together with --zk-auth, and a bad file is a flag
// error naming it without showing the secret.
func TestZKAuthFileFlag(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "zk-auth")
	if err := os.WriteFile(good, []byte("fleet:a-long-zk-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"--zk-auth-file", good}, io.Discard)
	if err != nil || o.coord.Auth != "fleet:a-long-zk-secret" {
		t.Fatalf("--zk-auth-file %s: auth %q, %v", good, o.coord.Auth, err)
	}
	world := filepath.Join(dir, "world")
	if err := os.WriteFile(world, []byte("fleet:a-long-zk-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(world, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--zk-auth-file", world},
		{"--zk-auth-file", filepath.Join(dir, "missing")},
		{"--zk-auth-file", good, "--zk-auth", "other:pw"},
	} {
		_, err := parseFlags(args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--zk-auth-file") || strings.Contains(err.Error(), "a-long-zk-secret") {
			t.Errorf("%q: %v; want a flag error naming --zk-auth-file, without the secret", args, err)
		}
	}
}
