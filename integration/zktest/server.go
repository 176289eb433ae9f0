// Package zktest runs a real ZooKeeper server (Debian's zookeeper package,
// started with java) for tests; integration/faultproxy cuts one client off
// while the server keeps running. Tests of coordination run against these,
// never against a fake of ZooKeeper. Only a test binary may use it
// (testenv.TestOnly).
package zktest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/testenv"
)

// Jar is the ZooKeeper server jar of Debian's zookeeper package; its manifest
// pulls the rest of the classpath from /usr/share/java.
const Jar = testenv.ZooKeeperJar

// NettyClasspath is the Netty jars of Debian's packages that ZooKeeper's
// Netty connection factory (the one serving secureClientPort) needs beyond
// the ones zookeeper.jar's manifest names.
const NettyClasspath = "/usr/share/java/netty-codec.jar:/usr/share/java/netty-resolver.jar"

// logJar gives the server an slf4j binding so its warnings reach the log file.
const logJar = "/usr/share/java/slf4j-simple.jar"

// Options tune the server. The zero value of a field means its default.
type Options struct {
	// TickTime is ZooKeeper's basic time unit; sessions are expired in ticks.
	// Default 100ms, so a session times out within about a tick of its timeout.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the timeout the server
	// grants. go-zookeeper does not expose the negotiated value, so both are
	// pinned wide (default 200ms..60s) and the server grants what the client
	// asks for.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// MaxClientCnxns is the connection limit per client IP; default 0
	// (unlimited: a simulation opens a thousand sessions from loopback).
	MaxClientCnxns int
	// StartTimeout bounds the wait for the server to serve; default 30s.
	StartTimeout time.Duration
	// TLS, when set, adds a secureClientPort (TLSAddr) served by Netty with
	// these certificates; clients must present a certificate of its CA
	// (ssl.clientAuth=need). The plaintext port stays, for four-letter
	// commands and tests that need both.
	TLS *Certs
	// SystemProperties are Java system properties for the server's JVM,
	// such as "zookeeper.enforceQuota": "true" (hard quotas refuse writes
	// with QUOTAEXCEEDED instead of logging a warning).
	SystemProperties map[string]string
}

func (o *Options) defaults() {
	if o.TickTime == 0 {
		o.TickTime = 100 * time.Millisecond
	}
	if o.MinSessionTimeout == 0 {
		o.MinSessionTimeout = 2 * o.TickTime
	}
	if o.MaxSessionTimeout == 0 {
		o.MaxSessionTimeout = 60 * time.Second
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 30 * time.Second
	}
}

// Server is one standalone ZooKeeper server on a loopback port.
type Server struct {
	t       testing.TB
	opts    Options
	dir     string
	port    int
	tlsPort int
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
}

// Start runs a ZooKeeper server with default options on a free loopback port
// and stops it when the test ends. Without java or ZooKeeper the test fails,
// and under go test -short it skips (testenv.Require).
func Start(t testing.TB) *Server { return StartWith(t, Options{}) }

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Server {
	testenv.TestOnly("zktest")
	t.Helper()
	testenv.Require(t, "zookeeper")
	opts.defaults()
	s := &Server{t: t, opts: opts, dir: t.TempDir()}
	s.logPath = filepath.Join(s.dir, "zookeeper.log")
	port, err := FreePort()
	if err != nil {
		t.Fatalf("zktest: pick a free port: %v", err)
	}
	s.port = port
	if opts.TLS != nil {
		if s.tlsPort, err = FreePort(); err != nil {
			t.Fatalf("zktest: pick a free port: %v", err)
		}
	}
	if err := s.writeConfig(); err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(s.Stop)
	if err := s.start(); err != nil {
		t.Fatalf("zktest: %v", err)
	}
	return s
}

// Addr is the server's client address, 127.0.0.1:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// TLSAddr is the secureClientPort's address, 127.0.0.1:port; "" without
// Options.TLS.
func (s *Server) TLSAddr() string {
	if s.tlsPort == 0 {
		return ""
	}
	return fmt.Sprintf("127.0.0.1:%d", s.tlsPort)
}

// DataDir is the server's data directory, kept across Restart.
func (s *Server) DataDir() string { return filepath.Join(s.dir, "data") }

func (s *Server) writeConfig() error {
	if err := os.MkdirAll(s.DataDir(), 0o755); err != nil {
		return fmt.Errorf("make data dir: %w", err)
	}
	cfg := fmt.Sprintf(`tickTime=%d
minSessionTimeout=%d
maxSessionTimeout=%d
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
maxClientCnxns=%d
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok,cons,stat
forceSync=no
globalOutstandingLimit=100000
`, s.opts.TickTime.Milliseconds(), s.opts.MinSessionTimeout.Milliseconds(),
		s.opts.MaxSessionTimeout.Milliseconds(), s.DataDir(), s.port, s.opts.MaxClientCnxns)
	if c := s.opts.TLS; c != nil {
		cfg += TLSConfig(s.tlsPort, c.ServerFile, c.CAFile)
	}
	return os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(cfg), 0o644)
}

// TLSConfig is the zoo.cfg lines of a secureClientPort with PEM key and
// trust stores (ZooKeeper 3.8 reads PEM with type=PEM; the key store file
// holds the key and the certificate). Netty's connection factory is the one
// that speaks TLS; it serves the plaintext clientPort as well.
func TLSConfig(port int, keyStore, trustStore string) string {
	return fmt.Sprintf(`secureClientPort=%d
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=%s
ssl.keyStore.type=PEM
ssl.trustStore.location=%s
ssl.trustStore.type=PEM
ssl.clientAuth=need
`, port, keyStore, trustStore)
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	cp := "/etc/zookeeper/conf:" + Jar
	if _, err := os.Stat(logJar); err == nil {
		cp += ":" + logJar
	}
	if s.opts.TLS != nil {
		// The jar's manifest leaves out the Netty parts that only the
		// Netty connection factory needs.
		cp += ":" + NettyClasspath
	}
	args := []string{"-Xmx512m", "-XX:+UseSerialGC", "-Xshare:auto",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dzookeeper.admin.enableServer=false"}
	props := make([]string, 0, len(s.opts.SystemProperties))
	for k, v := range s.opts.SystemProperties {
		props = append(props, "-D"+k+"="+v)
	}
	sort.Strings(props)
	args = append(append(args, props...), "-cp", cp,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain",
		filepath.Join(s.dir, "zoo.cfg"))
	cmd := exec.Command("java", args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = serverProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start java: %w", err)
	}
	exited := make(chan struct{})
	s.cmd, s.log, s.exited = cmd, logf, exited
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(s.opts.StartTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			s.cmd = nil
			logf.Close()
			return fmt.Errorf("zookeeper exited at start; log %s:\n%s", s.logPath, tail(s.logPath))
		default:
		}
		if out, err := FourLetter(s.Addr(), "srvr", time.Second); err == nil && strings.Contains(out, "Mode:") {
			if s.opts.TLS != nil {
				if err := s.opts.TLS.handshake(s.TLSAddr(), time.Until(deadline)); err != nil {
					return fmt.Errorf("zookeeper on %s serves, but no TLS handshake on %s: %w; log %s:\n%s", s.Addr(), s.TLSAddr(), err, s.logPath, tail(s.logPath))
				}
			}
			s.t.Logf("zktest: zookeeper serving on %s (pid %d, tickTime %v, TLS on %q)", s.Addr(), cmd.Process.Pid, s.opts.TickTime, s.TLSAddr())
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("zookeeper on %s not serving after %v; log %s:\n%s", s.Addr(), s.opts.StartTimeout, s.logPath, tail(s.logPath))
}

// Stop kills the server (SIGKILL, like a crash; the data dir stays). It is
// safe to call twice.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	killGroup(s.cmd.Process.Pid)
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		s.t.Logf("zktest: zookeeper pid %d did not exit after SIGKILL", s.cmd.Process.Pid)
	}
	s.log.Close()
	s.cmd, s.log = nil, nil
}

// Restart stops the server and starts it again on the same port with the same
// data dir: sessions and their ephemeral nodes survive.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("zktest: restart: %v", err)
	}
}

// FourLetter sends a four-letter command (srvr, ruok, cons, stat) and returns
// the answer.
func FourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	testenv.TestOnly("zktest")
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	_, err = buf.ReadFrom(bufio.NewReader(c))
	return buf.String(), err
}

// handedOut holds the ports FreePort returned in this process.
var handedOut sync.Map

// FreePort returns a loopback port free at the time of the call. It is
// below Linux's ephemeral range (32768-60999), so the kernel never hands it
// to another process's connect or listen(":0") before the caller binds it;
// and it is never handed out twice in one test process (a test starting
// 256 workers asks for 512 ports before any is bound: one in 12,000 each
// would collide with near certainty). Another test process could still
// take it, one in 12,000.
func FreePort() (int, error) {
	testenv.TestOnly("zktest")
	for i := 0; i < 100; i++ {
		port := 20000 + rand.IntN(12000)
		if _, taken := handedOut.LoadOrStore(port, true); taken {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			l.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port in 20000..31999 after 100 tries")
}

// FreeAddr is FreePort as 127.0.0.1:port, failing the test if none is found.
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
