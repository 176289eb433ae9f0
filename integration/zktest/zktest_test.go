package zktest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/integration/faultproxy"
)

func connect(t *testing.T, addr string, timeout time.Duration) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, timeout, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, ev
}

func waitState(t *testing.T, ev <-chan zk.Event, want zk.State, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case e := <-ev:
			if e.State == want {
				return
			}
		case <-deadline:
			t.Fatalf("no %v within %v", want, within)
		}
	}
}

// The server serves, keeps a session and its ephemeral node across Restart,
// and the proxy's blackhole expires a session while the server runs.
func TestServerRestartAndBlackhole(t *testing.T) {
	s := Start(t)
	c, ev := connect(t, s.Addr(), 2*time.Second)
	waitState(t, ev, zk.StateHasSession, 10*time.Second)
	if _, err := c.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	sid := c.SessionID()
	s.Restart()
	waitState(t, ev, zk.StateHasSession, 10*time.Second)
	if c.SessionID() != sid {
		t.Fatalf("session changed across restart: %x -> %x", sid, c.SessionID())
	}
	if ok, _, err := c.Exists("/e"); err != nil || !ok {
		t.Fatalf("ephemeral node lost across restart: %v %v", ok, err)
	}

	p := faultproxy.New(t, s.Addr())
	pc, pev := connect(t, p.Addr(), time.Second)
	waitState(t, pev, zk.StateHasSession, 10*time.Second)
	if _, err := pc.Create("/p", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	waitState(t, pev, zk.StateDisconnected, 5*time.Second)
	// The server expires the cut-off session and drops its node.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, _, err := c.Exists("/p")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node of the blackholed session still there after 5s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Heal()
	waitState(t, pev, zk.StateExpired, 15*time.Second)
}
