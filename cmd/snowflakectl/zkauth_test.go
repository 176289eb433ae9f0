package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// The ZooKeeper credentials from a file: init makes the root writable by
// that identity only; -h never shows the environment's credentials; a
// file others can read is refused (exit 2) naming the flag.
func TestZKAuthFile(t *testing.T) {
	t.Setenv("SNOWFLAKE_ZK_AUTH", "ops:hunter2-from-env")
	for _, cmd := range []string{"slots", "init", "repair", "recover"} {
		out, errs, _ := runCtl(t, "", cmd, "-h")
		if strings.Contains(out+errs, "hunter2") {
			t.Errorf("snowflakectl %s -h shows the environment's credentials:\n%s%s", cmd, out, errs)
		}
	}
	t.Setenv("SNOWFLAKE_ZK_AUTH", "")
	zs := zktest.Start(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "zk-auth")
	if err := os.WriteFile(file, []byte("fleet:s3cret-zk-pass-0001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wfile := filepath.Join(dir, "zk-worker-auth")
	if err := os.WriteFile(wfile, []byte("worker:s3cret-worker-pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", "/authed", "--zk-auth-file", file, "--zk-worker-auth-file", wfile, "--new-fleet"}, &out, &errb); rc != exitOK {
		t.Fatalf("init --zk-auth-file: rc %d, %s", rc, errb.String())
	}
	conn, err := zkconn.Dial([]string{zs.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	acl, _, err := conn.GetACL("/authed")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acl {
		if a.Scheme == "world" && a.Perms&(zk.PermWrite|zk.PermDelete|zk.PermCreate|zk.PermAdmin) != 0 {
			t.Fatalf("root ACL %+v lets the world write", acl)
		}
	}
	if _, err := conn.Set("/authed", []byte("x"), -1); err == nil {
		t.Fatal("a client without the credentials wrote the root")
	}
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", "/authed", "--zk-auth-file", file, "--zk-worker-auth-file", wfile}, &out, &errb)
	if rc != exitUsage || !strings.Contains(errb.String(), "--zk-auth-file") || strings.Contains(errb.String(), "s3cret") {
		t.Fatalf("init with a world-readable credentials file: rc %d, %q; want exit 2 naming --zk-auth-file, without the secret", rc, errb.String())
	}
}
