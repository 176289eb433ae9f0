//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DelayProxy forwards TCP from the containers to the ZooKeeper servers'
// published ports, holding every chunk for a settable delay in each
// direction: ZooKeeper slow rather than down. The kernel here has no netem
// (tc's delay), so the delay is the suite's own. It listens on the gateway
// of the project's zk network, which the containers reach as the host.
type DelayProxy struct {
	delay  atomic.Int64 // time.Duration, each way
	lns    []net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
}

// StartDelayProxy listens on host (an IP), one port per target; target(i)
// is dialled for each connection to the i-th port, so that a restarted
// server's new published port is followed.
func StartDelayProxy(host string, n int, target func(i int) (string, error)) (*DelayProxy, error) {
	p := &DelayProxy{conns: map[net.Conn]bool{}}
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("delay proxy: %w", err)
		}
		p.lns = append(p.lns, ln)
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.accept(ln, i, target) }()
	}
	return p, nil
}

// Addrs is the proxy's listen addresses, as a ZooKeeper connect string.
func (p *DelayProxy) Addrs() string {
	var as []string
	for _, ln := range p.lns {
		as = append(as, ln.Addr().String())
	}
	return strings.Join(as, ",")
}

// SetDelay sets the delay each way for every chunk from now on.
func (p *DelayProxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// Close stops listening and cuts every connection.
func (p *DelayProxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	for _, ln := range p.lns {
		ln.Close()
	}
	p.wg.Wait()
}

func (p *DelayProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

func (p *DelayProxy) accept(ln net.Listener, i int, target func(int) (string, error)) {
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		addr, err := target(i)
		if err != nil {
			in.Close()
			continue
		}
		out, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in) || !p.track(out) {
			in.Close()
			out.Close()
			return
		}
		p.wg.Add(2)
		go func() { defer p.wg.Done(); p.pipe(out, in) }()
		go func() { defer p.wg.Done(); p.pipe(in, out) }()
	}
}

// pipe copies src to dst, each chunk released delay after it was read,
// in order; either side ending closes both.
func (p *DelayProxy) pipe(dst, src net.Conn) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	ch := make(chan chunk, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case ch <- chunk{buf[:n], time.Now().Add(time.Duration(p.delay.Load()))}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		if d := time.Until(c.at); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.b); err != nil && !errors.Is(err, io.EOF) {
			break
		}
	}
	dst.Close()
	src.Close()
}

// gateway is the host's address on a docker network.
func gateway(ctx context.Context, network string) (string, error) {
	out, err := docker(ctx, "network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}", network)
	if err != nil {
		return "", err
	}
	for _, f := range strings.Fields(out) {
		if ip := net.ParseIP(f); ip != nil && ip.To4() != nil {
			return f, nil
		}
	}
	return "", fmt.Errorf("network %s has no IPv4 gateway (%q)", network, out)
}

// zkPublished is the published client port of the i-th server (zk1 is 0).
func (s *Stack) zkPublished(ctx context.Context, i int) (string, error) {
	cs, err := s.Containers(ctx, "zk"+strconv.Itoa(i+1))
	if err != nil {
		return "", err
	}
	if len(cs) == 0 || cs[0].Addr("2181") == "" {
		return "", fmt.Errorf("zk%d has no published port", i+1)
	}
	return cs[0].Addr("2181"), nil
}
