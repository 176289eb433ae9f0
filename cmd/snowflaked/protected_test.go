package main

import (
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/zktest"
)

// hostIP is an IPv4 address of this machine other than loopback.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatalf("the test needs an IPv4 address other than loopback on this machine: %v", addrs)
	return ""
}

// TestProtectedModeDaemon: snowflaked without --requirepass-file, on all
// addresses, answers redis-cli from this host's other address with
// -DENIED and serves it from loopback; with SNOWFLAKE_PROTECTED_MODE=no it
// serves both. Before, it served every address.
func TestProtectedModeDaemon(t *testing.T) {
	bin := build(t)
	zks := zktest.Start(t)
	ip := hostIP(t)
	cli := func(host, port string) string {
		out, _ := exec.Command("redis-cli", "-h", host, "-p", port, "NEXTID").CombinedOutput()
		return strings.TrimSpace(string(out))
	}
	isID := func(s string) bool { _, err := strconv.ParseInt(s, 10, 64); return err == nil }
	for _, c := range []struct {
		env    []string
		denied bool
	}{{nil, true}, {[]string{"SNOWFLAKE_PROTECTED_MODE=no"}, false}} {
		port := freePort(t)
		d := startDaemon(t, bin, c.env, "--zk", zks.Addr(), "--zk-root", "/protected", "--session-timeout", "4s", "--horizon", "2s",
			"--listen", ":"+port)
		d.waitReady(20 * time.Second)
		if out := cli("127.0.0.1", port); !isID(out) {
			t.Errorf("env %v: NEXTID from loopback = %q", c.env, out)
		}
		out := cli(ip, port)
		if c.denied && !strings.HasPrefix(out, "DENIED snowflaked is running in protected mode") {
			t.Errorf("NEXTID from %s without a password = %q; want DENIED", ip, out)
		}
		if !c.denied && !isID(out) {
			t.Errorf("env %v: NEXTID from %s = %q; want an ID", c.env, ip, out)
		}
		if code := d.stop(); code != 0 {
			t.Errorf("env %v: exit %d", c.env, code)
		}
	}
}
