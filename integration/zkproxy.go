//go:build integration

package integration

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/snowfleet/snowfleet/integration/faultproxy"
)

// zkProxies forward TCP from the containers to the ZooKeeper servers'
// published ports, one fault proxy per server, holding every chunk for a
// settable delay in each direction: ZooKeeper slow rather than down. The
// kernel here has no netem (tc's delay), so the delay is the suite's own.
// They listen on the gateway of the project's zk network, which the
// containers reach as the host.
type zkProxies []*faultproxy.Proxy

// startZKProxies listens on host (an IP), one port per server; each
// connection dials its server's published port as it is then, so that a
// restarted server's new published port is followed.
func (s *Stack) startZKProxies(ctx context.Context, host string, n int) (zkProxies, error) {
	var ps zkProxies
	for i := 0; i < n; i++ {
		p, err := faultproxy.Listen(net.JoinHostPort(host, "0"), func() (string, error) { return s.zkPublished(ctx, i) })
		if err != nil {
			ps.Close()
			return nil, fmt.Errorf("delay proxy: %w", err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// Addrs is the proxies' listen addresses, as a ZooKeeper connect string.
func (ps zkProxies) Addrs() string {
	var as []string
	for _, p := range ps {
		as = append(as, p.Addr())
	}
	return strings.Join(as, ",")
}

// SetDelay sets the delay each way for every chunk from now on.
func (ps zkProxies) SetDelay(d time.Duration) {
	for _, p := range ps {
		p.SetDelay(d)
		p.SetRequestDelay(d)
	}
}

// Close stops listening and cuts every connection.
func (ps zkProxies) Close() {
	for _, p := range ps {
		p.Close()
	}
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
