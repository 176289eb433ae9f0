package main

import (
	"io"
	"net"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// A start that fails part-way (a port already taken) closes every port it
// had bound, so a supervisor's restart can bind them again.
func TestNewDaemonFailureClosesBoundPorts(t *testing.T) {
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, c := range []struct {
		name  string
		flag  string   // the flag given the busy port
		freed []string // the flags whose ports must be bindable again
	}{
		{"http busy", "--http", []string{"--listen"}},
		{"http-ids busy", "--http-ids", []string{"--listen", "--http"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var addrs map[string]string
			// A port found free can be taken by another process before
			// newDaemon binds it: then it fails on that flag instead, and
			// the case is tried again on other ports.
			for try := 1; ; try++ {
				addrs = map[string]string{"--listen": free(), "--http": free(), "--http-ids": free()}
				addrs[c.flag] = busy.Addr().String()
				var args []string
				for _, f := range []string{"--listen", "--http", "--http-ids"} {
					args = append(args, f, addrs[f])
				}
				o, err := parseFlags(append(args, "--zk", "127.0.0.1:1", "--zk-insecure"), io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				d, err := newDaemon(o, hclog.NewNullLogger())
				if err != nil && strings.Contains(err.Error(), "listen "+c.flag+" ") {
					break
				}
				if try == 3 || err == nil || !strings.Contains(err.Error(), "address already in use") {
					t.Fatalf("newDaemon = %v, %v; want the %s listen error", d, err, c.flag)
				}
			}
			for _, f := range c.freed {
				ln, err := net.Listen("tcp", addrs[f])
				if err != nil {
					t.Fatalf("%s %s still bound after the failed start: %v", f, addrs[f], err)
				}
				ln.Close()
			}
		})
	}
}
