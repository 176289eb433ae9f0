package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// init --close-ensemble-root (#36 item 2): ZooKeeper's / then takes the
// operator's cdrwa and the world's r, so a client with no credentials can
// no longer squat a znode at the top; the operator still can; run again it
// changes nothing; it refuses --zk-insecure. With the operator's digest as
// ZooKeeper's superDigest (as the shipped deployments configure it), the
// operator undoes a squat made before, even one whose ACL shuts everyone
// else out.
func TestCloseEnsembleRoot(t *testing.T) {
	opAuth := "operator:op-pass-0123456789abcdef"
	opID, err := tree.DigestID(opAuth)
	if err != nil {
		t.Fatal(err)
	}
	zs := zktest.StartWith(t, zktest.Options{SystemProperties: map[string]string{
		"zookeeper.DigestAuthenticationProvider.superDigest": opID.ID,
	}})
	anyone, err := zkconn.Dial([]string{zs.Addr()}, "", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer anyone.Close()
	// A squat made while / is still open, shutting out all but its maker.
	if _, err := anyone.Create("/squat", nil, 0, zk.DigestACL(zk.PermAll, "mallory", "secret")); err != nil {
		t.Fatal(err)
	}

	op, wk := credFile(t, "op", opAuth), credFile(t, "wk", "worker:wk-pass-0123456789abcdef")
	args := []string{"--zk", zs.Addr(), "--zk-root", "/closed", "--zk-auth-file", op, "--zk-worker-auth-file", wk, "--new-fleet", "--close-ensemble-root"}
	var out, errb bytes.Buffer
	if rc := runInit(args, &out, &errb); rc != exitOK || !strings.Contains(out.String(), "closed ZooKeeper's / on "+zs.Addr()) {
		t.Fatalf("init --close-ensemble-root: rc %d, stdout %q, stderr %q", rc, out.String(), errb.String())
	}
	acl, _, err := anyone.GetACL("/")
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := tree.NewFleetACL(opAuth, "worker:wk-pass-0123456789abcdef")
	if err != nil {
		t.Fatal(err)
	}
	if !tree.SameACL(acl, scheme.Root()) {
		t.Fatalf("/ has ACL %s, want %s", tree.FormatACL(acl), tree.FormatACL(scheme.Root()))
	}
	if _, err := anyone.Create("/squat2", nil, 0, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("a client with no credentials created /squat2 under a closed /: %v", err)
	}

	out.Reset()
	errb.Reset()
	if rc := runInit(args, &out, &errb); rc != exitOK || strings.Contains(out.String(), "closed ZooKeeper's /") {
		t.Fatalf("init --close-ensemble-root again: rc %d, stdout %q; want 0 and nothing closed", rc, out.String())
	}
	out.Reset()
	errb.Reset()
	if rc := runInit([]string{"--zk", zs.Addr(), "--zk-root", "/open", "--zk-insecure", "--close-ensemble-root"}, &out, &errb); rc != exitUsage ||
		!strings.Contains(errb.String(), "--close-ensemble-root needs the operator's and the workers' credentials") {
		t.Fatalf("init --zk-insecure --close-ensemble-root: rc %d, stderr %q; want 2", rc, errb.String())
	}

	// The runbook's undo: the operator, super by the superDigest, deletes
	// the squat whose ACL names only its maker.
	operator, err := zkconn.Dial([]string{zs.Addr()}, opAuth, 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer operator.Close()
	if err := anyone.Delete("/squat", -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("a client with no credentials deleted the squat: %v", err)
	}
	if err := operator.Delete("/squat", -1); err != nil {
		t.Fatalf("the operator (superDigest) cannot delete the squat: %v", err)
	}
	if _, err := operator.Create("/by-operator", nil, 0, scheme.Root()); err != nil {
		t.Fatalf("the operator cannot create under a closed /: %v", err)
	}
}
