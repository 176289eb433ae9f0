package worker

import (
	"encoding/json"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// serveIDs serves w's IDs over HTTP on a loopback port and returns its URL.
func serveIDs(t *testing.T, w *testWorker) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := w.srv.IDsServer()
	go hs.Serve(w.srv.IDsListener(ln))
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String()
}

// curl runs curl and returns the status line's code, the headers and body.
func curl(t *testing.T, args ...string) (code int, headers, body string) {
	t.Helper()
	testenv.Require(t, "curl")
	bin, err := exec.LookPath("curl")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, append([]string{"-s", "-i", "--max-time", "10"}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %v: %v", args, err)
	}
	head, body, _ := strings.Cut(strings.ReplaceAll(string(out), "\r\n", "\n"), "\n\n")
	status, _, _ := strings.Cut(head, "\n")
	f := strings.Fields(status)
	if len(f) < 2 {
		t.Fatalf("curl %v: no status line in %q", args, out)
	}
	code, _ = strconv.Atoi(f[1])
	return code, head, body
}

// TestHTTPIDs: GET /id and /ids?count=N through curl: JSON strings by
// default, numbers or short forms on request, text/plain by Accept; bad
// requests named; the password as a bearer token; counted as NEXTID and
// NEXTIDS.
func TestHTTPIDs(t *testing.T) {
	zk := startZK(t)
	w := startWorker(t, zk.Addr(), true, nil)
	url := serveIDs(t, w)

	code, _, body := curl(t, url+"/id")
	var one struct{ ID string }
	if err := json.Unmarshal([]byte(body), &one); code != 200 || err != nil {
		t.Fatalf("GET /id = %d %q (%v)", code, body, err)
	}
	prev := mustID(t, one.ID)

	code, _, body = curl(t, url+"/ids?count=5")
	var many struct{ IDs []string }
	if err := json.Unmarshal([]byte(body), &many); code != 200 || err != nil || len(many.IDs) != 5 {
		t.Fatalf("GET /ids?count=5 = %d %q (%v)", code, body, err)
	}
	for _, s := range many.IDs {
		if id := mustID(t, s); id != prev+1 && s != many.IDs[0] || id <= prev {
			t.Fatalf("GET /ids?count=5 = %v after %d: not ascending and contiguous", many.IDs, prev)
		} else {
			prev = id
		}
	}

	code, _, body = curl(t, url+"/ids?count=3&format=integer")
	var ints struct{ IDs []int64 }
	if err := json.Unmarshal([]byte(body), &ints); code != 200 || err != nil || len(ints.IDs) != 3 || ints.IDs[0] <= prev {
		t.Fatalf("format=integer: %d %q (%v)", code, body, err)
	}
	prev = ints.IDs[2]

	code, head, body := curl(t, "-H", "Accept: text/plain", url+"/ids?count=4&format=short")
	lines := strings.Fields(body)
	if code != 200 || !strings.Contains(head, "text/plain") || len(lines) != 4 {
		t.Fatalf("text/plain short: %d %q %q", code, head, body)
	}
	for _, l := range lines {
		if id := mustShort(t, l); id <= prev {
			t.Fatalf("short %s after %d", l, prev)
		} else {
			prev = id
		}
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{url + "/ids?count=0"}, 400, `count must be an integer in 1..4096, got \"0\"`},
		{[]string{url + "/ids?count=4097"}, 400, "1..4096"},
		{[]string{url + "/ids"}, 400, `got \"\"`},
		{[]string{url + "/id?format=hex"}, 400, `format must be string, integer or short, got \"hex\"`},
		{[]string{url + "/nope"}, 404, "GET /id or /ids?count=N"},
		{[]string{"-X", "POST", url + "/id"}, 405, "method POST is not allowed"},
	} {
		code, _, body := curl(t, c.args...)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("curl %v = %d %q, want %d saying %q", c.args, code, body, c.code, c.want)
		}
	}
	var m dto.Metric
	if err := w.srv.m.requests[w.srv.cmds.lookup([]byte("nextids"))][resOK].Write(&m); err != nil || m.GetCounter().GetValue() != 3 {
		t.Errorf("nextids ok requests = %v, %v; want 3", m.GetCounter().GetValue(), err)
	}

	// The password, as AUTH takes it, as a bearer token.
	pw := "correct-horse-battery-staple"
	w.srv.SetPasswords([][]byte{[]byte(pw)})
	if code, head, _ := curl(t, url+"/id"); code != 401 || !strings.Contains(head, "Www-Authenticate: Bearer") {
		t.Fatalf("no token: %d %q", code, head)
	}
	if code, _, _ := curl(t, "-H", "Authorization: Bearer wrong-wrong-wrong-wrong", url+"/id"); code != 401 {
		t.Fatalf("wrong token: %d", code)
	}
	if code, _, body := curl(t, "-H", "Authorization: Bearer "+pw, url+"/id"); code != 200 || !strings.Contains(body, `"id":"`) {
		t.Fatalf("right token: %d %q", code, body)
	}
}

// TestHTTPIDsNotReady: a worker without a lease answers 503 with
// Retry-After and Connection: close, so a balancer moves on.
func TestHTTPIDsNotReady(t *testing.T) {
	w := startWorker(t, "127.0.0.1:1", false, nil) // no ZooKeeper: no lease
	url := serveIDs(t, w)
	code, head, body := curl(t, url+"/ids?count=2")
	if code != 503 || !strings.Contains(head, "Retry-After: 1") || !strings.Contains(head, "Connection: close") ||
		!strings.Contains(body, "try another worker") {
		t.Fatalf("no lease: %d %q %q", code, head, body)
	}
}
