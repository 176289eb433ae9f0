package worker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zkconn"
	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// testWorker is a server on a loopback port, taking IDs from a lease (a
// coordinator on a real ZooKeeper, or a fakeLease), stopped when the test
// ends.
type testWorker struct {
	t     testing.TB
	lease IDSource
	coord *coordinator.Coordinator // nil on a fakeLease
	srv   *Server
	reg   *prometheus.Registry
	addr  string
	admin *httptest.Server
	stop  func()
}

var roots atomic.Int64

// noEventLoop is Config.NoEventLoop for the workers startWorker starts.
var noEventLoop bool

// startFake runs a worker on a fakeLease: for the tests of what the server
// does with requests and connections, which need no ZooKeeper.
func startFake(t testing.TB, mutate func(*Config)) *testWorker {
	t.Helper()
	return serve(t, newFakeLease(t), prometheus.NewRegistry(), mutate, nil)
}

// startWorker runs a worker against zkAddr under a fresh root. wait says
// whether to wait for the lease to be ready.
func startWorker(t testing.TB, zkAddr string, wait bool, mutate func(*Config)) *testWorker {
	t.Helper()
	return startWorkerWith(t, zkAddr, wait, mutate, func(cc *coordinator.Config) {
		cc.SessionTimeout, cc.Renew, cc.Horizon = 2*time.Second, 200*time.Millisecond, time.Second
		cc.ReleaseTimeout = time.Second
	})
}

// insecureCoordConfig is coordinator.DefaultConfig allowed to run without
// credentials.
func insecureCoordConfig() coordinator.Config {
	cc := coordinator.DefaultConfig()
	cc.Insecure = true
	return cc
}

// startWorkerWith is startWorker with the coordinator's config adjusted by
// mutateCoord (default timings when nil).
func startWorkerWith(t testing.TB, zkAddr string, wait bool, mutate func(*Config), mutateCoord func(*coordinator.Config)) *testWorker {
	t.Helper()
	cc := coordinator.DefaultConfig()
	cc.Servers = []string{zkAddr}
	cc.Insecure = true // tests about credentials set Auth
	cc.Root = fmt.Sprintf("/worker-test-%d-%d", time.Now().UnixNano(), roots.Add(1))
	if mutateCoord != nil {
		mutateCoord(&cc)
	}
	fleettest.InitFleet(t, cc.Servers, cc.Root, cc.Auth, cc.TLS)
	reg := prometheus.NewRegistry()
	coord, err := coordinator.New(cc, testLog(t).Named("coordinator"), reg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	leaseDone := make(chan error, 1)
	go func() { leaseDone <- coord.Run(ctx) }()
	w := serve(t, coord, reg, mutate, func() {
		cancel()
		if err := <-leaseDone; err != nil {
			t.Errorf("lease: %v", err)
		}
		if wait {
			// Every test worker has a root of its own, which owns all 32
			// datacenters: the next test's root would overlap it.
			deleteRoot(t, cc.Servers, cc.Root)
		}
	})
	w.coord = coord
	if wait {
		deadline := time.Now().Add(15 * time.Second)
		for !coord.Ready() {
			if time.Now().After(deadline) {
				t.Fatalf("lease not ready after 15s: %+v", coord.Status())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return w
}

// serve runs a server on lease and its admin handler, each on a loopback
// port; at the end of the test it shuts the server down, then runs
// stopLease (nil for none), then closes the admin server.
func serve(t testing.TB, lease IDSource, reg *prometheus.Registry, mutate func(*Config), stopLease func()) *testWorker {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Version = "test"
	cfg.NoEventLoop = noEventLoop
	if mutate != nil {
		mutate(&cfg)
	}
	srv, err := New(cfg, lease, testLog(t).Named("worker"), reg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()
	// Serve has the listener, and its loops, once lns holds it: a test
	// may look at the loops, or shut the server down, from then on.
	for {
		srv.mu.Lock()
		n := len(srv.lns)
		srv.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	w := &testWorker{t: t, lease: lease, srv: srv, reg: reg, addr: ln.Addr().String()}
	w.admin = httptest.NewServer(srv.Handler(reg))
	var stopped atomic.Bool
	w.stop = func() {
		if stopped.Swap(true) {
			return
		}
		_ = srv.Shutdown(context.Background())
		if err := <-serveDone; err != nil {
			t.Errorf("serve: %v", err)
		}
		if stopLease != nil {
			stopLease()
		}
		w.admin.Close()
	}
	t.Cleanup(w.stop)
	return w
}

func (w *testWorker) client(opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: w.addr, PoolSize: 4, MaxRetries: -1, DialTimeout: 2 * time.Second,
		ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	w.t.Cleanup(func() { c.Close() })
	return c
}

// raw is a plain TCP connection for sending bytes as they are.
type raw struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func (w *testWorker) dial(t testing.TB) *raw {
	t.Helper()
	nc, err := net.DialTimeout("tcp", w.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &raw{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *raw) send(s string) {
	r.t.Helper()
	_ = r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.nc.Write([]byte(s)); err != nil {
		r.t.Fatalf("write %q: %v", s, err)
	}
}

// line reads one reply line (without CRLF); "" and an error at EOF.
func (r *raw) line() (string, error) {
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	s, err := r.br.ReadString('\n')
	return strings.TrimSuffix(s, "\r\n"), err
}

func (r *raw) expect(want string) {
	r.t.Helper()
	got, err := r.line()
	if err != nil || got != want {
		r.t.Fatalf("reply = %q, %v; want %q", got, err, want)
	}
}

func (r *raw) expectPrefix(want string) string {
	r.t.Helper()
	got, err := r.line()
	if err != nil || !strings.HasPrefix(got, want) {
		r.t.Fatalf("reply = %q, %v; want prefix %q", got, err, want)
	}
	return got
}

// expectClosed checks that the server closed the connection.
func (r *raw) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := r.br.ReadByte()
	if err == nil {
		rest, _ := r.br.Peek(r.br.Buffered())
		r.t.Fatalf("connection still open; read %q", string(b)+string(rest))
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatalf("connection still open after 5s")
	}
}

// testLog logs warnings and errors into the test's log.
func testLog(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Warn, Output: testWriter{t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func startZK(t testing.TB) *zktest.Server { return zktest.Start(t) }

// deleteRoot deletes a test's fleet root and everything under it.
func deleteRoot(t testing.TB, servers []string, root string) {
	conn, err := zkconn.Dial(servers, "", 5*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Errorf("delete root %s: %v", root, err)
		return
	}
	defer conn.Close()
	var del func(p string) error
	del = func(p string) error {
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		var leaves []any
		for _, k := range kids {
			if k == "slots" { // 1,024 childless nodes: deleted in batches
				names, _, err := conn.Children(p + "/slots")
				if err != nil {
					return err
				}
				for _, n := range names {
					leaves = append(leaves, &zk.DeleteRequest{Path: p + "/slots/" + n, Version: -1})
				}
			}
			for len(leaves) > 0 {
				n := min(len(leaves), 256)
				if _, err := conn.Multi(leaves[:n]...); err != nil {
					return err
				}
				leaves = leaves[n:]
			}
			if err := del(p + "/" + k); err != nil {
				return err
			}
		}
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		if err := del(root); err != nil {
			done <- err
			return
		}
		// And its registry entry, as an operator retiring a fleet does.
		if err := conn.Delete(tree.RegistryNode(root), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			done <- err
			return
		}
		done <- nil
	}()
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		err = errors.New("timed out")
	}
	if err != nil {
		t.Errorf("delete root %s: %v", root, err)
	}
}
