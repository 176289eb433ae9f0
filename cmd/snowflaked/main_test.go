package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/testenv"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
	"github.com/snowfleet/snowfleet/snowflake/tlsfiles"
	"github.com/snowfleet/snowfleet/worker"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		code int
		out  string // in stdout (code 0) or stderr
	}{
		{[]string{"--version"}, nil, 0, "snowflaked "},
		{[]string{"--help"}, nil, 0, "SNOWFLAKE_<NAME>"},
		{[]string{"--horizon", "500ms"}, nil, 2, "--horizon 500ms: config Horizon 500ms must exceed --renew 1s"},
		{[]string{"--standby-horizon", "50s"}, nil, 2, "--standby-horizon 50s is larger than --horizon 40s"},
		{[]string{"--standby-horizon", "1s"}, nil, 2, "--standby-horizon 1s: config StandbyHorizon 1s must exceed --renew 1s"},
		{[]string{"--renew", "5s"}, nil, 2, "--standby-horizon 5s: config StandbyHorizon 5s must exceed --renew 5s"},
		{[]string{"--renew", "soon"}, nil, 2, `invalid value "soon" for flag -renew`},
		{[]string{"--datacenter", "40"}, nil, 2, "--datacenter 40: config Datacenter 40 is out of range -1..31"},
		{[]string{"--zk-root", "snowflake"}, nil, 2, `--zk-root "snowflake": config Root`},
		{[]string{"--zk", ","}, nil, 2, `--zk ",": config Servers: empty`},
		{[]string{"--zk-scan-skip", "/apps/private", "--zk-scan-skip", "private"}, nil, 2, `--zk-scan-skip /apps/private,private: config ScanSkip "private" is not an absolute`},
		{nil, map[string]string{"SNOWFLAKE_ZK_SCAN_SKIP": "/a,/b/"}, 2, `--zk-scan-skip /a,/b/: config ScanSkip "/b/" is not an absolute`},
		{[]string{"--zk-auth", "nopassword"}, nil, 2, "--zk-auth"},
		{[]string{"--session-timeout", "1ms"}, nil, 2, "--session-timeout 1ms"},
		{[]string{"--max-conns", "-1"}, nil, 2, "--max-conns -1: config MaxConns -1 is out of range"},
		{[]string{"--read-timeout", "0s"}, nil, 2, "--read-timeout 0s"},
		{[]string{"--log-format", "xml"}, nil, 2, `--log-format "xml": want text or json`},
		{[]string{"--log-level", "loud"}, nil, 2, `--log-level "loud"`},
		{[]string{"--listen", "7609"}, nil, 2, `--listen "7609": want host:port`},
		{[]string{"--listen", ""}, nil, 2, `--listen "" turns the plaintext ID port off, and there is no --tls-listen`},
		{[]string{"--shutdown-delay", "-1s"}, nil, 2, "--shutdown-delay -1s: want 0..10m"},
		{[]string{"--protected-mode", "maybe"}, nil, 2, `invalid value "maybe" for flag -protected-mode: want yes or no, got "maybe"`},
		{nil, map[string]string{"SNOWFLAKE_PROTECTED_MODE": "off"}, 2, `invalid value "off" for flag --protected-mode (from environment variable SNOWFLAKE_PROTECTED_MODE): want yes or no, got "off"`},
		{[]string{"extra"}, nil, 2, `unexpected argument "extra"`},
		{[]string{"--tls-listen", ":0", "--tls-cert-file", "/nonexistent/c.pem", "--tls-key-file", "/nonexistent/k.pem", "--tls-auth-clients", "no"}, nil, 2, `--tls-cert-file "/nonexistent/c.pem", --tls-key-file "/nonexistent/k.pem", --tls-ca-cert-file "", --tls-auth-clients no: bad TLS files`},
		{[]string{"--tls-listen", ":0", "--tls-cert-file", "c", "--tls-key-file", "k"}, nil, 2, "needs a CA file"},
		{[]string{"--tls-cert-file", "c"}, nil, 2, "need --tls-listen or --http-tls"},
		{[]string{"--zk-tls-cert-file", "/nonexistent/c.pem", "--zk-tls-key-file", "/nonexistent/k.pem"}, nil, 2, `--zk-tls-cert-file "/nonexistent/c.pem": config TLS.CertFile "/nonexistent/c.pem" cannot be read: bad ZooKeeper TLS files: open /nonexistent/c.pem`},
		{[]string{"--zk-tls-key-file", "k.pem"}, nil, 2, `--zk-tls-cert-file "": config TLS.CertFile: is empty but the key file is set: the certificate and key go together: bad ZooKeeper TLS files`},
		{nil, map[string]string{"SNOWFLAKE_ZK_TLS_CA_CERT_FILE": "/etc/hostname"}, 2, `--zk-tls-ca-cert-file "/etc/hostname": config TLS.CACertFile "/etc/hostname" holds no PEM certificate: bad ZooKeeper TLS files`},
		{[]string{"--requirepass-file", "/nonexistent/pw"}, nil, 2, `--requirepass-file "/nonexistent/pw": bad password file`},
		{nil, map[string]string{"SNOWFLAKE_REQUIREPASS_FILE": "/etc/hostname"}, 2, `--requirepass-file "/etc/hostname": bad password file: /etc/hostname is accessible to others`},
		{nil, map[string]string{"SNOWFLAKE_RENEW": "fast"}, 2, `invalid value "fast" for flag --renew (from environment variable SNOWFLAKE_RENEW)`},
		{nil, map[string]string{"SNOWFLAKE_HORIZON": "100ms"}, 2, "--horizon 100ms"},
		{[]string{"--version"}, map[string]string{"SNOWFLAKE_VERSION": "v9"}, 0, "snowflaked "},
		// Secure by default: no credentials and no --zk-insecure is refused.
		{nil, map[string]string{"SNOWFLAKE_ZK_INSECURE": ""}, 2, "no ZooKeeper credentials: give --zk-auth-file (the worker's digest identity), or --zk-insecure"},
		{[]string{"--zk-insecure=false"}, nil, 2, "give --zk-auth-file"},
		{[]string{"--zk-auth-file", "/nonexistent/zk"}, map[string]string{"SNOWFLAKE_ZK_INSECURE": ""}, 2, `--zk-auth-file "/nonexistent/zk"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			if _, ok := tc.env["SNOWFLAKE_ZK_INSECURE"]; !ok {
				t.Setenv("SNOWFLAKE_ZK_INSECURE", "true") // the cases are about other flags
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := runArgs(tc.args, &stdout, &stderr)
			out := stderr.String()
			if tc.code == 0 {
				out = stdout.String()
			}
			if code != tc.code || !strings.Contains(out, tc.out) {
				t.Fatalf("exit %d, want %d; stdout %q stderr %q; want %q", code, tc.code, stdout.String(), stderr.String(), tc.out)
			}
			if tc.code == 2 && strings.Count(strings.TrimSpace(stderr.String()), "\n") != 0 {
				t.Fatalf("usage error is not one line: %q", stderr.String())
			}
		})
	}
}

// daemonProc is one snowflaked process.
type daemonProc struct {
	t          *testing.T
	cmd        *exec.Cmd
	port, http string
	out        *syncBuffer
	exited     chan struct{}
	err        error
	// admin, when set, is the HTTPS client of an admin port with --http-tls.
	admin *http.Client
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) string {
	_, p, _ := net.SplitHostPort(zktest.FreeAddr(t))
	return p
}

func startDaemon(t *testing.T, bin string, env []string, args ...string) *daemonProc {
	t.Helper()
	return startDaemonAdmin(t, bin, env, nil, args...)
}

// startDaemonAdmin is startDaemon whose admin port is reached with admin
// (HTTPS, for --http-tls) when it is not nil.
func startDaemonAdmin(t *testing.T, bin string, env []string, admin *http.Client, args ...string) *daemonProc {
	t.Helper()
	d := spawnDaemon(t, bin, env, admin, true, args...)
	// Wait for the admin server (up before the lease).
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := d.get("/healthz"); code == 200 {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("snowflaked not up after 10s:\n%s", d.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// spawnDaemon starts bin on free ports and returns at once; it is killed
// when the test ends. initRoot: make its root first (initDaemonRoot).
func spawnDaemon(t *testing.T, bin string, env []string, admin *http.Client, initRoot bool, args ...string) *daemonProc {
	t.Helper()
	d := &daemonProc{t: t, port: freePort(t), http: freePort(t), out: &syncBuffer{}, exited: make(chan struct{}), admin: admin}
	args = append([]string{"--listen", "127.0.0.1:" + d.port, "--http", "127.0.0.1:" + d.http, "--log-level", "debug"}, args...)
	args = fleettest.InsecureUnlessAuth(args, env)
	if initRoot {
		initDaemonRoot(t, env, args)
	}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = append(os.Environ(), env...)
	d.cmd.Stdout, d.cmd.Stderr = d.out, d.out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
		if t.Failed() {
			t.Logf("snowflaked %v output:\n%s", args, d.out.String())
		}
	})
	return d
}

// initDaemonRoot makes the root a daemon started with args and env will
// use, as snowflakectl init --new-fleet does: workers never make one. A
// daemon without --zk is left to its test.
func initDaemonRoot(t *testing.T, env, args []string) {
	t.Helper()
	get := func(name string) string {
		if v := fleettest.FlagValue(args, "--"+name); v != "" {
			return v
		}
		key := "SNOWFLAKE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "="
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, key); ok {
				return v
			}
		}
		return ""
	}
	servers := get("zk")
	if servers == "" {
		return
	}
	files := tlsfiles.Files{CertFile: get("zk-tls-cert-file"), KeyFile: get("zk-tls-key-file"), CACertFile: get("zk-tls-ca-cert-file")}
	fleettest.InitFleet(t, strings.Split(servers, ","), get("zk-root"), get("zk-auth"), files)
}

func (d *daemonProc) get(path string) (int, string) {
	c, scheme := &http.Client{Timeout: 2 * time.Second}, "http"
	if d.admin != nil {
		c, scheme = d.admin, "https"
	}
	resp, err := c.Get(scheme + "://127.0.0.1:" + d.http + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (d *daemonProc) waitReady(within time.Duration) {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, body := d.get("/readyz")
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("/readyz still %d %q after %v", code, body, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d *daemonProc) status() worker.Status {
	d.t.Helper()
	code, body := d.get("/status")
	var st worker.Status
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		d.t.Fatalf("/status = %d %q: %v", code, body, err)
	}
	return st
}

// cli runs redis-cli against the daemon and returns its trimmed output.
func (d *daemonProc) cli(args ...string) string {
	d.t.Helper()
	out, err := exec.Command("redis-cli", append([]string{"-h", "127.0.0.1", "-p", d.port}, args...)...).CombinedOutput()
	if err != nil {
		d.t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// stop sends SIGTERM and returns the exit code.
func (d *daemonProc) stop() int {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
	select {
	case <-d.exited:
	case <-time.After(15 * time.Second):
		d.t.Fatalf("snowflaked did not exit 15s after SIGTERM:\n%s", d.out.String())
	}
	var ee *exec.ExitError
	if errors.As(d.err, &ee) {
		return ee.ExitCode()
	}
	if d.err != nil {
		d.t.Fatal(d.err)
	}
	return 0
}

func build(t *testing.T) string {
	t.Helper()
	testenv.Require(t, "redis-cli")
	bin := filepath.Join(t.TempDir(), "snowflaked")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestDaemon runs the built binary: it serves redis-cli, is ready, hands its
// slot over at once on SIGTERM (exit 0, lease node gone), and without
// ZooKeeper answers -NOLEASE with /readyz 503.
func TestDaemon(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	root := "/daemon-test"
	// A long session and horizon: a successor that had to wait either out
	// would take 10 s or more; after a clean release it starts at once.
	common := []string{"--zk", zks.Addr(), "--zk-root", root, "--datacenter", "5",
		"--session-timeout", "20s", "--renew", "500ms", "--horizon", "10s"}

	a := startDaemon(t, bin, nil, common...)
	a.waitReady(15 * time.Second)
	idA, err := strconv.ParseInt(a.cli("NEXTID"), 10, 64)
	if err != nil {
		t.Fatalf("redis-cli NEXTID: %v", err)
	}
	stA := a.status()
	f, _ := snowflake.Decode(idA)
	if f.Slot().String() != stA.Slot || f.Datacenter != 5 || stA.LeaseNode == "" || stA.Advertise != "127.0.0.1:"+a.port {
		t.Fatalf("id %d (slot %v), /status %+v", idA, f.Slot(), stA)
	}
	if out := a.cli("DECODE", strconv.FormatInt(idA, 10)); !strings.Contains(out, "datacenter\n5") {
		t.Fatalf("DECODE = %q", out)
	}

	// Hold every other slot of datacenter 5, so that a second worker must
	// stand by for A's.
	conn, err := zkconn.Dial([]string{zks.Addr()}, "", 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for m := 0; m <= snowflake.MaxMachine; m++ {
		s := snowflake.Slot{Datacenter: 5, Machine: m}
		if s.String() == stA.Slot {
			continue
		}
		if _, err := conn.Create(zklayout.LeasePrefix(root, s), []byte(`{"addr":"placeholder:1"}`),
			zk.FlagEphemeral|zk.FlagSequence, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("hold %v: %v", s, err)
		}
	}
	b := startDaemon(t, bin, nil, common...)
	deadline := time.Now().Add(10 * time.Second)
	for b.status().State != coordinator.StateStandby {
		if time.Now().After(deadline) {
			t.Fatalf("second worker not standing by: %+v", b.status())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if out := b.cli("NEXTID"); !strings.HasPrefix(out, "NOLEASE") || !strings.Contains(out, "standby") {
		t.Fatalf("standby NEXTID = %q", out)
	}
	if code, _ := b.get("/readyz"); code != 503 {
		t.Fatalf("standby /readyz = %d", code)
	}

	lastA, err := strconv.ParseInt(a.cli("NEXTID"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if code := a.stop(); code != 0 {
		t.Fatalf("SIGTERM: exit %d, want 0:\n%s", code, a.out.String())
	}
	stopped := time.Now()
	ok, _, err := conn.Exists(zklayout.LeasesPath(root) + "/" + stA.LeaseNode)
	if err != nil || ok {
		t.Fatalf("lease node %s still there after exit (%v)", stA.LeaseNode, err)
	}
	b.waitReady(5 * time.Second)
	t.Logf("successor ready %v after the holder exited", time.Since(stopped).Round(time.Millisecond))
	idB, err := strconv.ParseInt(b.cli("NEXTID"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	fb, _ := snowflake.Decode(idB)
	if fb.Slot().String() != stA.Slot || idB <= lastA {
		t.Fatalf("successor id %d (slot %v) after %d (slot %s)", idB, fb.Slot(), lastA, stA.Slot)
	}
	for _, want := range []string{"draining connections, then releasing the lease", "connections drained", "released slot"} {
		if !strings.Contains(a.out.String(), want) {
			t.Errorf("holder's log lacks %q", want)
		}
	}
	if code := b.stop(); code != 0 {
		t.Fatalf("second worker: exit %d", code)
	}

	t.Run("no zookeeper", func(t *testing.T) {
		// Configured through the environment only.
		dead := freePort(t)
		c := startDaemon(t, bin, []string{"SNOWFLAKE_ZK=127.0.0.1:" + dead, "SNOWFLAKE_SESSION_TIMEOUT=2s",
			"SNOWFLAKE_LOG_FORMAT=json"})
		time.Sleep(200 * time.Millisecond)
		if out := c.cli("NEXTID"); !strings.HasPrefix(out, "NOLEASE this worker holds no lease") {
			t.Fatalf("NEXTID without ZooKeeper = %q", out)
		}
		if code, body := c.get("/readyz"); code != 503 {
			t.Fatalf("/readyz without ZooKeeper = %d %q", code, body)
		}
		if c.cli("PING") != "PONG" {
			t.Fatal("PING")
		}
		if !strings.Contains(c.out.String(), `"@message":"starting"`) {
			t.Fatalf("log not JSON: %s", c.out.String())
		}
		if code := c.stop(); code != 0 {
			t.Fatalf("SIGTERM without ZooKeeper: exit %d", code)
		}
	})
	t.Run("port in use", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		out, err := exec.Command(bin, "--zk", zks.Addr(), "--zk-insecure", "--listen", l.Addr().String(), "--http", "127.0.0.1:0").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "address already in use") {
			t.Fatalf("exit %v, output %s", err, out)
		}
	})
}
