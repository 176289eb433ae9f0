//go:build linux

package clients

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/integration/faultproxy"
	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// TestPooledClientMovesOffRefusingWorker: a worker cut off from ZooKeeper
// keeps its clients' connections but refuses them (-NOLEASE) once its
// ceiling passes. With --close-on-nolease (the default) it closes each
// connection after the refusal, and redis-py's reconnect lands, through
// HAProxy, on the worker that serves: a handful of failed attempts. With
// --close-on-nolease=false the pooled connection stays on the refusing
// worker, and the client is refused on it until the cut heals.
func TestPooledClientMovesOffRefusingWorker(t *testing.T) {
	need(t)
	for _, closeOn := range []bool{true, false} {
		t.Run("close-on-nolease="+strconv.FormatBool(closeOn), func(t *testing.T) {
			errs := refusalsSeen(t, closeOn)
			t.Logf("--close-on-nolease=%v: redis-py saw %d failed attempts during a 5 s cut", closeOn, errs)
			if closeOn && errs > 8 {
				t.Errorf("with --close-on-nolease the client failed %d times; it should have moved to the serving worker after a few", errs)
			}
			if !closeOn && errs < 15 {
				t.Errorf("without --close-on-nolease the client failed only %d times: the cut did not keep it on the refusing worker, so this test shows nothing", errs)
			}
		})
	}
}

// refusalsSeen runs two workers behind HAProxy, the first one's ZooKeeper
// through a proxy, draws with redis-py over two pooled connections (one on
// each worker), cuts the first worker off ZooKeeper for 5 s, and returns
// how many attempts failed.
func refusalsSeen(t *testing.T, closeOn bool) int {
	zks := zktest.Start(t)
	px := faultproxy.New(t, zks.Addr())
	args := []string{"--close-on-nolease=" + strconv.FormatBool(closeOn)}
	opts := func(zk string) fleettest.Options {
		return fleettest.Options{ZK: zk, Root: "/moveon", SessionTimeout: sessionTimeout,
			Renew: 200 * time.Millisecond, Horizon: time.Second, Args: args}
	}
	ws := []*fleettest.Worker{fleettest.Start(t, opts(px.Addr())), fleettest.Start(t, opts(zks.Addr()))}
	for _, w := range ws {
		w.WaitReady(20 * time.Second)
	}
	front := startHAProxy(t, ws)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() {
		time.Sleep(time.Second)
		px.Blackhole()
		time.Sleep(5 * time.Second)
		px.Heal()
	}()
	d := pyDraw(ctx, t, drawSpec{addr: front, total: 1000, batch: 10, lanes: 2, pause: 5 * time.Millisecond, min: 8 * time.Second})
	if d.err != nil {
		t.Fatalf("redis-py: %v", d.err)
	}
	if dup := duplicates(d.ids); dup != 0 {
		t.Errorf("%d duplicate IDs among %d", dup, len(d.ids))
	}
	return len(d.errs)
}
