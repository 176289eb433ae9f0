package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// recover says what it did on stdout only once it has done it (#42 item 2):
// on a secured fleet, without the operator's identity (none, or the
// workers', which may raise the slot nodes but not write the root's
// marker), it fails with nothing on stdout; answered at a terminal, stdout
// holds the question alone; with the operator's identity, the summary.
func TestRecoverPrintsOnlyWhatItDid(t *testing.T) {
	t.Setenv("SNOWFLAKE_ZK_AUTH_FILE", "")
	t.Setenv("SNOWFLAKE_ZK_WORKER_AUTH_FILE", "")
	zs := zktest.Start(t)
	op, wk := credFile(t, "op", "ops:op-pass-0123456789"), credFile(t, "wk", "worker:wk-pass-0123456789")
	base := []string{"--zk", zs.Addr(), "--zk-root", "/secured"}
	var out, errb bytes.Buffer
	if rc := runInit(append(base, "--zk-auth-file", op, "--zk-worker-auth-file", wk, "--new-fleet"), &out, &errb); rc != exitOK {
		t.Fatalf("init: rc %d, %s", rc, errb.String())
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"no identity", nil},
		{"the workers' identity", []string{"--zk-auth-file", wk}},
	} {
		out.Reset()
		errb.Reset()
		rc := runRecover(append(append(append([]string{}, base...), c.args...), "--yes"), input{}, &out, &errb)
		if rc != exitFailure || out.Len() != 0 || !strings.Contains(errb.String(), "--zk-auth-file") {
			t.Errorf("recover --yes with %s: rc %d, stdout %q, stderr %q; want exit 1, nothing on stdout, the operator's --zk-auth-file named", c.name, rc, out.String(), errb.String())
		}
		out.Reset()
		errb.Reset()
		rc = runRecover(append(append([]string{}, base...), c.args...), input{r: strings.NewReader("y\n"), terminal: true}, &out, &errb)
		if rc != exitFailure || !strings.HasSuffix(out.String(), "Go on? [y/N] ") || strings.Contains(out.String(), "recovered") {
			t.Errorf("recover answered yes with %s: rc %d, stdout %q; want exit 1 and the question alone", c.name, rc, out.String())
		}
	}
	out.Reset()
	errb.Reset()
	if rc := runRecover(append(base, "--zk-auth-file", op, "--yes"), input{}, &out, &errb); rc != exitOK ||
		!strings.HasPrefix(out.String(), "recovered root /secured ") || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("recover --yes as the operator: rc %d, stdout %q, stderr %q; want one line, the summary", rc, out.String(), errb.String())
	}
}
