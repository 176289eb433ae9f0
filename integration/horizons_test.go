//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/tree"
)

// The suite runs the daemon's default horizons (40 s, 5 s while a standby
// waits). The scenarios that need a holder's reservation short (a crashed,
// paused or cut-off holder's slot passing on within their bounds, a holder
// reaching its ceiling) get it the way a fleet does: a standby waits for
// the datacenter, a worker or a standby node of the suite's own.

// horizonGauge is the horizon of a holder's last renew.
const horizonGauge = "snowflake_coordinator_reservation_horizon_seconds"

// checkHorizons makes sure every worker runs the daemon's default horizon:
// the compose file passes its own default, and an environment left set
// (SNOWFLAKE_HORIZON) would make the suite prove something else.
func checkHorizons(ctx context.Context, st *Stack) error {
	ws, err := st.Workers(ctx)
	if err != nil {
		return err
	}
	for _, w := range ws {
		v, err := metricValue(ctx, w, horizonGauge)
		if err != nil {
			return err
		}
		if time.Duration(v*float64(time.Second)) != horizon {
			return fmt.Errorf("%s reserves %v ahead, not the daemon's default horizon %v (SNOWFLAKE_HORIZON set?)", w.Short(), v, horizon)
		}
	}
	return nil
}

// metricValue reads one unlabelled sample of a worker's /metrics.
func metricValue(ctx context.Context, w Container, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.Addr("7610")+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics of %s: %w", w.Short(), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, fmt.Errorf("metrics of %s: %w", w.Short(), err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("metrics of %s: no %s", w.Short(), name)
}

// holdStandby makes a standby node of the suite's own for the workers'
// datacenter, named and filled as a waiting worker makes its node, through
// a session of its own: while it exists the holders reserve only the
// standby horizon ahead. Release deletes it (closing the session).
func (e env) holdStandby() *Placeholders {
	e.t.Helper()
	conn, err := e.st.DialZKAs(e.ctx, e.st.ids.Worker)
	e.must(err, "dial ZooKeeper as the worker identity")
	p := &Placeholders{conn: conn}
	e.t.Cleanup(p.Release)
	dir := tree.StandbyPath(zkRoot)
	// init made it; the worker identity may not make it (no create on the
	// root), as a worker may not.
	if ok, _, err := conn.Exists(dir); err != nil || !ok {
		e.t.Fatalf("%s: exists %v (%v); snowflakectl init makes it", dir, ok, err)
	}
	name := fmt.Sprintf("dc%02d-s%016x", datacenter, uint64(conn.SessionID()))
	dc, err := tree.ParseStandbyName(name)
	e.must(err, "the suite's standby node name")
	if dc != datacenter {
		e.t.Fatalf("standby node %s reads as datacenter %d", name, dc)
	}
	data, _ := json.Marshal(map[string]any{"addr": "", "host": placeholderHost, "pid": 0, "version": "integration", "since": time.Now().UTC()})
	_, err = conn.Create(path.Join(dir, name), data, zk.FlagEphemeral, tree.ACL(e.st.ids.Worker))
	e.must(err, "make the suite's standby node")
	return p
}

// shortened waits until each worker given serves with a reservation at
// most the standby horizon ahead (a standby waits, so its renews shorten
// it; issue 15 asks for it within two renews), and returns when. A fault
// injected before would meet a reservation the full horizon ahead.
func (e env) shortened(ws ...Container) time.Time {
	e.t.Helper()
	slack := standbyHorizon + renew // the poll's own delay, on top
	deadline := time.Now().Add(10 * time.Second)
	for {
		var long []string
		for _, w := range ws {
			s, err := getStatus(e.ctx, w)
			now := time.Now().UnixMilli()
			if err != nil || s.State != coordinator.StateServing || s.CeilingMs-now > slack.Milliseconds() {
				long = append(long, fmt.Sprintf("%s %s, ceiling %+d ms", w.Short(), s.State, s.CeilingMs-now))
			}
		}
		if len(long) == 0 {
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("a standby waits, yet not every holder shortened its reservation to %v within 10 s: %v", standbyHorizon, long)
		}
		e.sleep(100 * time.Millisecond)
	}
	return time.Now()
}

// ceilingSince is the highest ceiling a container reported under one lease
// node in the polls sent after since: its confirmed ceiling once it was
// shortened (all its polls would give the full horizon it had before). With
// no such poll every comparison against it would pass, so that fails the
// scenario.
func (e env) ceilingSince(id, lease string, since time.Time) int64 {
	e.t.Helper()
	c := e.mon.MaxCeiling(id, lease, since)
	if c == 0 {
		e.t.Errorf("no poll of %s's /status under lease %s after %s: nothing to hold its successor or its IDs to",
			id[:min(12, len(id))], lease, since.Format("15:04:05.000"))
	}
	return c
}

// polledSince waits until the monitor has polled a container under one
// lease node after since, so that ceilingSince has a ceiling to give even
// if the container is killed right after.
func (e env) polledSince(id, lease string, since time.Time) {
	e.t.Helper()
	e.waitFor(5*time.Second, "a poll of the worker's ceiling before the fault", func() bool {
		return e.mon.MaxCeiling(id, lease, since) > 0
	})
}
