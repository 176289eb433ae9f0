package main

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// unreadHogs is how many connections TestHostileUnreadReplies opens, the
// figure of issue 38 (348 MiB of RSS before the output limit).
const unreadHogs = 4000

// kernelPerConn is what the kernel holds for a connection that pipelines
// without reading, as worker/README.md states it: a 4 KiB receive buffer
// (8 KiB with the kernel's share) and, sent to nobody, TCP_NOTSENT_LOWAT
// (16 KiB) plus one segment the kernel takes past it (up to 64 KiB). A
// pod's memory limit counts it (cgroup v2), RSS does not. While the
// client's acknowledgements lag, what was sent and not yet acknowledged
// counts too (ss measured up to 132 KiB for a connection): the test also
// measures the worker's side of every connection (workerSockMem) and holds
// it, with the RSS of the same moment, under the kit's limit.
const kernelPerConn = 88 << 10

// TestHostileUnreadReplies: unreadHogs connections pipelining NEXTIDS 4096
// STRING and never reading leave a worker, run with the settings of the
// Kubernetes kit (deploy/k8s), under the kit's memory limit (its RSS, and
// the kernel's buffers of max-conns connections, kernelPerConn) and
// serving a clean client, which gets its IDs without a repeat (issue 38).
// Each hog writes a pipeline far larger than what the worker may hold for
// it (--client-output-limit), so that without the limit every hog holds a
// whole reply in the worker.
func TestHostileUnreadReplies(t *testing.T) {
	limitMiB, maxConns, goMemLimit := k8sWorkerLimits(t)
	if maxConns < unreadHogs+1 {
		t.Fatalf("the kit's SNOWFLAKE_MAX_CONNS %d leaves no room for %d hogs and a clean client", maxConns, unreadHogs)
	}
	raiseFDLimit(t, 2*unreadHogs+256)
	bin := build(t)
	zks := zktest.Start(t)
	// The kit's max-conns and GOMEMLIMIT; the timeouts at their defaults
	// (write 10s), so that no hog is dropped by a timeout while the RSS is
	// measured.
	d := startDaemon(t, bin, []string{"GOMEMLIMIT=" + goMemLimit}, "--zk", zks.Addr(), "--zk-root", "/unread",
		"--max-conns", strconv.Itoa(maxConns), "--log-level", "info")
	d.waitReady(15 * time.Second)
	pid := d.cmd.Process.Pid
	base := rss(t, pid)

	// Every hog connects first, so that all are open at once.
	hogs := make([]net.Conn, unreadHogs)
	t.Cleanup(func() {
		for _, nc := range hogs {
			if nc != nil {
				nc.Close()
			}
		}
	})
	var wg sync.WaitGroup
	errs := make(chan error, unreadHogs+1)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < unreadHogs; i += 16 {
				nc, err := net.DialTimeout("tcp", "127.0.0.1:"+d.port, 5*time.Second)
				if err != nil {
					errs <- fmt.Errorf("hog %d: %w", i, err)
					return
				}
				hogs[i] = nc
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	// ... and the worker has accepted them all.
	for deadline := time.Now().Add(30 * time.Second); d.status().Connections < unreadHogs; {
		if time.Now().After(deadline) {
			t.Fatalf("the worker accepted %d of %d hogs in 30s", d.status().Connections, unreadHogs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The worker's RSS, sampled until the end; and, less often (ss walks
	// every socket), the kernel's memory for the worker's side of its
	// connections, with the RSS of the same moment: what the pod's limit
	// counts.
	var mu sync.Mutex
	peak := base
	var both, kernelPeak sockMem
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for i := 0; ; i++ {
			withKernel := i%10 == 0
			var k sockMem
			if withKernel {
				k = workerSockMem(t, d.port)
			}
			r := rss(t, pid)
			mu.Lock()
			peak = max(peak, r)
			if withKernel {
				if k.total+r > both.total {
					both = sockMem{total: k.total + r, conns: k.conns}
				}
				kernelPeak.total = max(kernelPeak.total, k.total)
				kernelPeak.perConn = max(kernelPeak.perConn, k.perConn)
			}
			mu.Unlock()
			select {
			case <-stopSampling:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	// Each pipelines far more than the worker may hold for it, until the
	// worker stops reading it (the write then blocks, and the deadline
	// ends it), and never reads.
	pipeline := []byte(strings.Repeat("NEXTIDS 4096 STRING\r\n", 64))
	start := time.Now()
	for _, nc := range hogs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = nc.SetWriteDeadline(time.Now().Add(3 * time.Second))
			for {
				if _, err := nc.Write(pipeline); err != nil {
					return
				}
			}
		}()
	}
	hogsDone := make(chan struct{})
	go func() { wg.Wait(); close(hogsDone) }()

	// Meanwhile a clean client draws NEXTIDS 4096 STRING and reads them,
	// and the worker's RSS is sampled.
	nc, err := net.DialTimeout("tcp", "127.0.0.1:"+d.port, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	seen := map[string]bool{}
	clean := 0
	for done := false; !done; clean++ {
		select {
		case <-hogsDone:
			done = true
		default:
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write([]byte("NEXTIDS 4096 STRING\r\n")); err != nil {
			t.Fatalf("clean client, request %d: %v", clean, err)
		}
		if l, err := br.ReadString('\n'); err != nil || l != "*4096\r\n" {
			t.Fatalf("clean client, reply %d: %q, %v", clean, l, err)
		}
		for range 4096 {
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatalf("clean client, reply %d: %v", clean, err)
			}
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("clean client, reply %d: %v", clean, err)
			}
			if seen[l] {
				t.Fatalf("ID %q issued twice", strings.TrimSpace(l))
			}
			seen[l] = true
		}
		time.Sleep(50 * time.Millisecond)
	}
	attack := time.Since(start)
	close(stopSampling)
	<-sampled
	m := d.scrape()
	// What the worker's RSS may use of the limit: the rest is the kernel's
	// for max-conns such connections.
	room := int64(limitMiB)<<20 - int64(maxConns)*kernelPerConn
	t.Logf("%d hogs for %v; the clean client drew %d x 4096 IDs; worker RSS %d MiB before, peak %d MiB (%d KiB a hog); "+
		"closed by the output limit %v, by the write timeout %v; the kit's limit %d MiB, max-conns %d, room for the RSS %d MiB; "+
		"the kernel's for the worker's side (ss) peak %d MiB, up to %d KiB a connection; RSS and kernel together peak %d MiB (%d connections open); "+
		"TCP socket memory now %s",
		unreadHogs, attack.Round(time.Millisecond), clean, base>>20, peak>>20, (peak-base)/unreadHogs>>10,
		m["snowflake_worker_output_limit_closes_total"], m[`snowflake_worker_connection_timeouts_total{kind="write"}`],
		limitMiB, maxConns, room>>20, kernelPeak.total>>20, kernelPeak.perConn>>10, both.total>>20, both.conns, tcpSocketMem(t))
	if peak >= room {
		t.Errorf("worker RSS peaked at %d MiB with %d hogs: past the %d MiB the kit's %d MiB leave it beside the kernel's buffers of %d connections",
			peak>>20, unreadHogs, room>>20, limitMiB, maxConns)
	}
	if both.total >= int64(limitMiB)<<20 {
		t.Errorf("worker RSS and the kernel's buffers of its %d connections reached %d MiB together: past the kit's %d MiB",
			both.conns, both.total>>20, limitMiB)
	}
	if code, _ := d.get("/readyz"); code != 200 {
		t.Errorf("/readyz = %d under the hogs", code)
	}
}

// k8sWorkerLimits reads the worker's memory limit (MiB),
// SNOWFLAKE_MAX_CONNS and GOMEMLIMIT from the kit's Deployment, so that
// the test holds the kit to what it states.
func k8sWorkerLimits(t *testing.T) (limitMiB, maxConns int, goMemLimit string) {
	t.Helper()
	b, err := os.ReadFile("../../deploy/k8s/snowflaked-deployment.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mem := regexp.MustCompile(`(?s)limits:\s*\n\s*cpu: "?\w+"?\s*\n\s*memory: (\d+)Mi`).FindSubmatch(b)
	conns := regexp.MustCompile(`name: SNOWFLAKE_MAX_CONNS\s*\n\s*value: "(\d+)"`).FindSubmatch(b)
	gml := regexp.MustCompile(`name: GOMEMLIMIT\s*\n\s*value: (\w+)`).FindSubmatch(b)
	if mem == nil || conns == nil || gml == nil {
		t.Fatal("deploy/k8s/snowflaked-deployment.yaml: no memory limit in Mi, SNOWFLAKE_MAX_CONNS or GOMEMLIMIT")
	}
	limitMiB, _ = strconv.Atoi(string(mem[1]))
	maxConns, _ = strconv.Atoi(string(conns[1]))
	return limitMiB, maxConns, string(gml[1])
}

// raiseFDLimit raises this process's soft limit on open files to n (the
// worker inherits it), or fails when the hard limit is lower.
func raiseFDLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Fatalf("open files: hard limit %d, the test needs %d (ulimit -Hn)", lim.Max, n)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
}

// tcpSocketMem is the kernel's memory for every TCP socket of this host's
// network namespace (/proc/net/sockstat), the hogs' side too: for the log,
// since it counts towards a pod's memory limit under cgroup v2.
func tcpSocketMem(t *testing.T) string {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return "unknown"
	}
	m := regexp.MustCompile(`TCP: .* mem (\d+)`).FindSubmatch(b)
	if m == nil {
		return "unknown"
	}
	pages, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return fmt.Sprintf("%d MiB (both ends, /proc/net/sockstat)", pages*int64(os.Getpagesize())>>20)
}

// sockMem is what the kernel holds for the worker's side of its
// connections: in all, the most for one, and over how many.
type sockMem struct {
	total, perConn int64
	conns          int
}

// skmemRe is ss -m's memory of a socket: r (received, unread), f (forward
// allocation, charged and not yet used) and w (queued to send).
var skmemRe = regexp.MustCompile(`skmem:\(r(\d+),rb\d+,t\d+,tb\d+,f(\d+),w(\d+)`)

// workerSockMem is the kernel's memory for the established connections
// of the worker's port, from ss (iproute2): what cgroup v2 charges a pod
// for them.
func workerSockMem(t *testing.T, port string) sockMem {
	out, err := exec.Command("ss", "-tmnH", "state", "established", "( sport = :"+port+" )").Output()
	if err != nil {
		t.Errorf("ss (apt-get install iproute2): %v", err)
		return sockMem{}
	}
	var m sockMem
	for _, f := range skmemRe.FindAllSubmatch(out, -1) {
		var n int64
		for _, v := range f[1:] {
			x, _ := strconv.ParseInt(string(v), 10, 64)
			n += x
		}
		m.total += n
		m.perConn = max(m.perConn, n)
		m.conns++
	}
	return m
}
