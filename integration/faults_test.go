//go:build integration

package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// zkDetect is how long a ZooKeeper server takes to notice a peer gone:
// syncLimit (10) × tickTime (500 ms) in the compose file.
const zkDetect = 5 * time.Second

// i: cut one ZooKeeper server off its two peers (the quorum network) while
// a worker's session is on it and workers still reach it: the server
// leaves the quorum, and the worker must find the majority and renew there
// (keeping its session, or re-claiming if the leader expired it).
func zkPartition(e env) result {
	leader, others := e.zkModes()
	var target, victim Container
	var vs workerStatus
	for _, z := range append(others, leader) { // followers first
		cons, err := zktest.FourLetter(z.Addr("2181"), "cons", 2*time.Second)
		if err != nil {
			continue
		}
		for _, w := range e.workers() {
			s := e.status(w)
			if s.SessionID != 0 && strings.Contains(cons, fmt.Sprintf("sid=0x%x", s.SessionID)) {
				target, victim, vs = z, w, s
				break
			}
		}
		if target.ID != "" {
			break
		}
	}
	if target.ID == "" {
		e.t.Fatal("no worker's session found on any ZooKeeper server (cons)")
	}
	role := "follower"
	if target.ID == leader.ID {
		role = "leader" // no worker on a follower this time: the leader is cut off instead
	}
	net := e.st.Network("quorum")
	fault := time.Now()
	e.docker("network", "disconnect", net, target.ID)
	left := e.waitFor(zkDetect+20*time.Second, "the cut-off server leaves the quorum", func() bool {
		m := Mode(target.Addr("2181"))
		return m != "leader" && m != "follower"
	})
	// The worker renews through the majority while the partition lasts: a
	// ceiling confirmed after the cut.
	var s workerStatus
	e.waitFor(zkDetect+recoveryBound+10*time.Second, victim.Short()+" renews through the majority", func() bool {
		s, _ = getStatus(e.ctx, victim)
		return s.State == coordinator.StateServing && s.Ready && s.CeilingMs > fault.UnixMilli()+horizon.Milliseconds()
	})
	back := time.Now()
	_, err := WaitServing(e.ctx, e.st, 3, recoveryBound)
	e.must(err, "the fleet while a server is cut off")
	if Mode(target.Addr("2181")) == "follower" || Mode(target.Addr("2181")) == "leader" {
		e.t.Errorf("%s rejoined a quorum while cut off from its peers: the partition did not hold", target.Service)
	}
	e.docker("network", "connect", "--alias", target.Service+"-q", net, target.ID)
	e.must(e.st.WaitZK(e.ctx, 60*time.Second), "the cut-off server rejoins")
	kept := "kept its session"
	if s.SessionID != vs.SessionID {
		kept = "lost its session and re-claimed"
	}
	return result{want: 3, fault: fault, back: back, outage: zkDetect,
		note: fmt.Sprintf("%s (%s, %s's session) cut off its peers; out of the quorum after %.1f s; %s renewed through the majority %.1f s after the cut and %s (%s → %s)",
			target.Service, role, victim.Short(), left.Seconds(), victim.Short(), back.Sub(fault).Seconds(), kept, vs.Slot, s.Slot)}
}

// j: a worker whose every ZooKeeper packet is held 350 ms each way (through
// the suite's delay proxy): renews take longer than the renew interval,
// yet stay far inside the horizon, so it must keep serving throughout.
func zkSlow(e env) result {
	const delay = 350 * time.Millisecond
	gw, err := gateway(e.ctx, e.st.Network("zk"))
	e.must(err, "the zk network's gateway")
	px, err := e.st.startZKProxies(e.ctx, gw, 3)
	e.must(err, "start the delay proxy")
	defer px.Close()
	w := e.addWorker("the proxied worker", "SNOWFLAKE_ZK_CONNECT="+px.Addrs())
	e.sleep(time.Second)
	sum0, n0 := e.renewStats(w)
	errs0 := e.col.ContainerErrors(w.ID)
	px.SetDelay(delay)
	start := time.Now()
	e.sleep(8 * time.Second)
	sum1, n1 := e.renewStats(w)
	px.SetDelay(0)
	end := time.Now()
	mean := time.Duration(0)
	if n1 > n0 {
		mean = time.Duration((sum1 - sum0) / (n1 - n0) * float64(time.Second))
	}
	if n1 <= n0 || mean <= renew {
		e.t.Errorf("renews under the delay: %.0f of mean %v, want longer than the renew interval %v: the delay did not take effect", n1-n0, mean, renew)
	}
	// It kept serving: no refusal or failure on its direct stream, and
	// every poll of it serving with its ceiling ahead.
	for k, n := range e.col.ContainerErrors(w.ID) {
		if n > errs0[k] {
			e.t.Errorf("%s failed %d direct calls (%s) while ZooKeeper was slow", w.Short(), n-errs0[k], k)
		}
	}
	var polls int
	minHeadroom := int64(1 << 62)
	for _, s := range e.mon.Samples()[w.ID] {
		if s.at.Before(start) || s.at.After(end) {
			continue
		}
		polls++
		minHeadroom = min(minHeadroom, s.CeilingMs-s.at.UnixMilli())
		if s.State != coordinator.StateServing {
			e.t.Errorf("%s was %s at %s while ZooKeeper was slow", w.Short(), s.State, s.at.Format("15:04:05.000"))
		}
	}
	if polls < 10 || minHeadroom <= 0 {
		e.t.Errorf("%d polls of %s while slow, least ceiling headroom %d ms", polls, w.Short(), minHeadroom)
	}
	e.docker("stop", "-t", "10", w.ID)
	e.docker("rm", "-f", w.ID)
	return result{want: 3, note: fmt.Sprintf("%s behind a %v-each-way delay for 8 s: %.0f renews, mean %v (interval %v); ceiling headroom never below %.1f s; kept serving",
		w.Short(), delay, n1-n0, mean.Round(time.Millisecond), renew, float64(minHeadroom)/1000)}
}

// renewStats reads the sum and count of a worker's renew latency histogram.
func (e env) renewStats(w Container) (sum, count float64) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+w.Addr("7610")+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	e.must(err, "metrics of "+w.Short())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	e.must(err, "metrics of "+w.Short())
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(strings.TrimSpace(val), 64)
		switch name {
		case "snowflake_coordinator_renew_duration_seconds_sum":
			sum = v
		case "snowflake_coordinator_renew_duration_seconds_count":
			count = v
		}
	}
	return sum, count
}

// k: kill all three ZooKeeper servers while a standby waits (all other
// free slots held), so that the holders reserve only the standby horizon
// ahead; hold them down past it: every holder reaches its ceiling and
// refuses (-NOLEASE), none above it (the ceiling check over every ID).
// Start them (their data kept): sessions and lease nodes survive, and
// every holder serves again on its lease. Without a standby the default
// horizon rides the outage out: f and n. (Whether the standby still waits
// afterwards depends on the suite's placeholder session surviving too,
// which a loaded host has failed to reconnect in time: not asserted.)
func ensembleRestart(e env) result {
	holders := e.workers()
	p, standby := e.standbyFor(3)
	e.shortened(holders...)
	leases := map[string]string{}
	for _, w := range holders {
		leases[w.ID] = e.status(w).LeaseNode
	}
	zks, err := e.st.ZooKeepers(e.ctx)
	e.must(err, "list ZooKeeper")
	ids := []string{}
	for _, z := range zks {
		ids = append(ids, z.ID)
	}
	fault := time.Now()
	e.docker(append([]string{"kill", "-s", "KILL"}, ids...)...)
	for _, z := range zks {
		if m := Mode(z.Addr("2181")); m != "" {
			e.t.Errorf("%s still answers srvr (%s) after the kill", z.Service, m)
		}
	}
	down := standbyHorizon + 3*time.Second
	e.sleep(down)
	// Every holder reached its ceiling: none serves now.
	for _, w := range holders {
		if err := serves(e.ctx, w.Addr("7609")); err == nil {
			e.t.Errorf("%s still serves %v after the ensemble went (standby horizon %v)", w.Short(), down, standbyHorizon)
		}
	}
	e.docker(append([]string{"start"}, ids...)...)
	e.must(e.st.WaitZK(e.ctx, 90*time.Second), "quorum after the restart")
	quorum := time.Since(fault)
	e.waitFor(recoveryBound+30*time.Second, "the holders serve again", func() bool {
		for _, w := range holders {
			if s, err := getStatus(e.ctx, w); err != nil || !s.Ready || serves(e.ctx, w.Addr("7609")) != nil {
				return false
			}
		}
		return true
	})
	back := time.Now()
	kept := 0
	for _, w := range holders {
		if s := e.status(w); s.LeaseNode == leases[w.ID] {
			kept++
		} else {
			e.t.Errorf("%s holds %q after the ensemble restart, %q before: its session did not survive", w.Short(), s.LeaseNode, leases[w.ID])
		}
	}
	p.Release() // the standby takes a slot now
	return result{want: 4, fault: fault, back: back, outage: quorum,
		note: fmt.Sprintf("all 3 servers killed for %v while %s stood by; quorum back %.1f s after the kill; %d of 3 workers kept their lease nodes", down, standby.Short(), quorum.Seconds(), kept)}
}

// l: SIGTERM a worker while the whole ensemble is down: the release must
// give up within its bound (the worker exits by itself, well inside the
// stop grace period), leaving the stored reservation as it was, at or
// above every ID it served.
func sigtermZKDown(e env) result {
	ws := e.workers()
	w := ws[0]
	s := e.status(w)
	zks, err := e.st.ZooKeepers(e.ctx)
	e.must(err, "list ZooKeeper")
	ids := []string{}
	for _, z := range zks {
		ids = append(ids, z.ID)
	}
	fault := time.Now()
	e.docker(append([]string{"kill", "-s", "KILL"}, ids...)...)
	e.sleep(time.Second)
	stop := time.Now()
	e.docker("stop", "-t", "10", w.ID)
	took := time.Since(stop)
	code, err := docker(e.ctx, "inspect", "-f", "{{.State.ExitCode}}", w.ID)
	e.must(err, "exit code of "+w.Short())
	if code != "0" {
		e.t.Errorf("%s exited with code %s on SIGTERM while ZooKeeper was down (137: killed at the end of the grace period)", w.Short(), code)
	}
	if took > 8*time.Second {
		e.t.Errorf("%s took %v to stop while ZooKeeper was down", w.Short(), took.Round(100*time.Millisecond))
	}
	e.docker(append([]string{"start"}, ids...)...)
	e.must(e.st.WaitZK(e.ctx, 90*time.Second), "quorum after the restart")
	quorum := time.Since(fault)
	rec := e.slotRecord(s.Slot)
	ceiling := e.mon.MaxCeiling(w.ID, s.LeaseNode, time.Time{})
	_, hi, n := slotRange(e.col.ContainerIDs(w.ID), s.Slot)
	if n == 0 || ceiling == 0 {
		e.t.Errorf("%s served %d IDs on %s, polled ceiling %d: nothing to hold the kept reservation to", w.Short(), n, s.Slot, ceiling)
	}
	if rec.ReservedUntilMs < ceiling || rec.ReservedUntilMs < hi {
		e.t.Errorf("slot %s stored reservation %d below the stopped worker's ceiling %d or its last ID's ms %d", s.Slot, rec.ReservedUntilMs, ceiling, hi)
	}
	if rec.Holder != s.LeaseNode {
		e.t.Errorf("slot %s names holder %q, not the stopped worker's %s: a release landed with ZooKeeper down?", s.Slot, rec.Holder, s.LeaseNode)
	}
	e.docker("start", w.ID)
	return result{want: 3, fault: fault, outage: quorum,
		note: fmt.Sprintf("%s stopped in %.1f s (exit %s) with the ensemble down; %s kept reservation %d ≥ its ceiling %d ≥ its last ms %d (%d IDs); quorum back %.1f s after the kill",
			w.Short(), took.Seconds(), code, s.Slot, rec.ReservedUntilMs, ceiling, hi, n, quorum.Seconds())}
}

// slotRecord reads a slot node.
func (e env) slotRecord(slot string) tree.SlotRecord {
	e.t.Helper()
	conn, err := e.st.DialZK(e.ctx)
	e.must(err, "dial ZooKeeper")
	defer conn.Close()
	sm, err := tree.ReadSlotMap(conn, zkRoot)
	e.must(err, "read the slot map")
	sl, err := snowflake.ParseSlot(slot)
	e.must(err, "parse slot")
	return sm.Slots[sl]
}

// m: kill -9 a worker and let a different container (a standby, every
// other free slot held) take its slot: the successor's floor lies at or
// above the dead holder's confirmed ceiling, and their IDs do not meet.
func crashTakenOver(e env) result {
	ws := e.workers()
	w := ws[0]
	s := e.status(w)
	p, standby := e.standbyFor(3)
	since := e.shortened(w)
	e.polledSince(w.ID, s.LeaseNode, since)
	fault := time.Now()
	e.docker("kill", "-s", "KILL", w.ID)
	took := e.waitFor(sessionTimeout+standbyHorizon+15*time.Second, "another container takes the crashed worker's slot", func() bool {
		x, _ := getStatus(e.ctx, standby)
		return x.State == coordinator.StateServing && x.Slot == s.Slot
	})
	back := time.Now()
	e.sleep(2 * time.Second)
	ss := e.status(standby)
	// Its ceiling once shortened: the full horizon it had before the
	// standby came is what the shortening took back.
	ceiling := e.ceilingSince(w.ID, s.LeaseNode, since)
	if ss.FloorMs < ceiling {
		e.t.Errorf("%s's floor %d on %s lies below the crashed holder's confirmed ceiling %d", standby.Short(), ss.FloorMs, s.Slot, ceiling)
	}
	note := e.disjoint(w, standby, s.Slot)
	e.docker("rm", "-f", w.ID)
	p.Release()
	return result{want: 3, fault: fault, back: back, outage: standbyHorizon,
		note: fmt.Sprintf("%s killed; %s took %s %.1f s later; floor %d ≥ dead holder's ceiling %d; %s", w.Short(), standby.Short(), s.Slot, took.Seconds(), ss.FloorMs, ceiling, note)}
}
