package faultproxy_test

import (
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// SetDelay makes every answer of the server come that late, its end of
// stream included (the answer is whole, then the close), and SetDelay(0)
// lets answers through at once again. SetRequestDelay holds the request
// instead, and both together add up.
func TestProxyDelay(t *testing.T) {
	s := zktest.Start(t)
	p := faultproxy.New(t, s.Addr())
	ask := func() time.Duration {
		t.Helper()
		start := time.Now()
		out, err := zktest.FourLetter(p.Addr(), "ruok", 5*time.Second)
		if err != nil || out != "imok" {
			t.Fatalf("ruok through the proxy: %q, %v", out, err)
		}
		return time.Since(start)
	}
	ask()
	const delay = 400 * time.Millisecond
	p.SetDelay(delay)
	if d := ask(); d < delay {
		t.Errorf("a delayed answer took %v, want at least the delay %v", d, delay)
	}
	p.SetDelay(0)
	t.Logf("after SetDelay(0) an answer took %v", ask())
	p.SetRequestDelay(delay)
	if d := ask(); d < delay {
		t.Errorf("a delayed request took %v, want at least the delay %v", d, delay)
	}
	p.SetDelay(delay)
	if d := ask(); d < 2*delay {
		t.Errorf("delayed both ways a request took %v, want at least twice the delay %v", d, delay)
	}
}
