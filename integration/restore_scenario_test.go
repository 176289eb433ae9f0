//go:build integration

package integration

import (
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// The restores of #37 item 7: a recover that fails part-way and is run
// again (r2), and a restore that keeps the workers' sessions while a worker
// that lost its lease to it claims again after others (r3).

// zkBackup copies every ZooKeeper server's data and log directories aside,
// inside its container, as root (cp -a keeps the server's own user).
func (e env) zkBackup(zks []Container) {
	for _, z := range zks {
		e.docker("exec", "-u", "0", z.ID, "sh", "-c", "rm -rf /backup && mkdir /backup && cp -a /data/version-2 /backup/data && cp -a /datalog/version-2 /backup/datalog")
	}
}

// zkRestore puts the backup back on every server and restarts them
// together. keepEpoch keeps each server's epoch files (currentEpoch,
// acceptedEpoch) of the moment: the restored quorum elects a leader under
// a new epoch, its zxids run above every client's, and the sessions in the
// backup survive (nobody is refused). Without it the epoch goes back with
// the data, as a restore of whole volumes does, and every client that saw
// a later zxid is refused.
func (e env) zkRestore(zks []Container, ids []string, keepEpoch bool) {
	// ZooKeeper keeps its epoch files beside the transaction log
	// (dataLogDir's version-2) or the snapshots: both are looked at, and
	// a server that has none fails the scenario.
	const epochs = "for d in data datalog; do for f in currentEpoch acceptedEpoch; do "
	keep, put := "true", "true"
	if keepEpoch {
		keep = "rm -rf /backup/epoch && mkdir /backup/epoch && " + epochs +
			"if [ -f /$d/version-2/$f ]; then cp -a /$d/version-2/$f /backup/epoch/$d-$f; fi; done; done; ls /backup/epoch/*-currentEpoch >/dev/null"
		put = epochs + "if [ -f /backup/epoch/$d-$f ]; then cp -a /backup/epoch/$d-$f /$d/version-2/$f; fi; done; done"
	}
	for _, z := range zks {
		e.docker("exec", "-u", "0", z.ID, "sh", "-c", keep+
			" && rm -rf /data/version-2 /datalog/version-2 && cp -a /backup/data /data/version-2 && cp -a /backup/datalog /datalog/version-2 && "+put)
	}
	e.docker(append([]string{"kill", "-s", "KILL"}, ids...)...)
	e.docker(append([]string{"start"}, ids...)...)
	e.must(e.st.WaitZK(e.ctx, 90*time.Second), "quorum of the restored ensemble")
}

// awaitingRecover reports whether the worker's /readyz says it waits for
// snowflakectl recover.
func (e env) awaitingRecover(c Container) bool {
	req, _ := http.NewRequestWithContext(e.ctx, http.MethodGet, "http://"+c.Addr("7610")+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return strings.Contains(string(b), "awaiting_recover")
}

// rootRecovery is the recovery marker the root carries now.
func (e env) rootRecovery(conn *zk.Conn) string {
	data, _, err := conn.Get(zkRoot)
	e.must(err, "read the root")
	info, err := tree.DecodeRoot(zkRoot, data)
	e.must(err, "decode the root")
	return info.Recovery
}

// noClaimWhile fails the scenario when, for d, a worker that waited for
// recover (waiting) serves on a lease it did not hold when the wait began:
// it claimed before a recover had finished.
func (e env) noClaimWhile(d time.Duration, waiting []Container, before map[string]string, why string) {
	for end := time.Now().Add(d); time.Now().Before(end); e.sleep(200 * time.Millisecond) {
		for _, w := range waiting {
			s, err := getStatus(e.ctx, w)
			if err == nil && s.Ready && s.LeaseNode != "" && s.LeaseNode != before[w.ID] {
				e.t.Errorf("%s claimed before recover finished (%s): it serves %s on %s", w.Short(), why, s.Slot, s.LeaseNode)
				return
			}
		}
	}
}

// r2: ZooKeeper is restored from a copy a minute old, as in r, and recover
// dies part-way: its connection is cut once it has raised some slot nodes
// (the operator is ZooKeeper's super user here, so no ACL can stop it).
// The recover that died leaves no marker, so the workers waiting for it go
// on waiting; recover runs again and every worker serves.
func recoverInterrupted(e env) result {
	holders := e.workers()
	before := e.leaseNodes(holders)
	zks, ids := e.zkCluster()
	e.zkBackup(zks)
	// An election after the backup: the restore brings the epoch back to
	// the backup's, the next election gives the epoch the workers have
	// seen again, and its zxids start below theirs: every worker is
	// refused and waits for recover (a refused session).
	e.docker(append([]string{"restart"}, ids...)...)
	e.must(e.st.WaitZK(e.ctx, 90*time.Second), "quorum after the election")
	e.sleep(time.Minute)
	fault := time.Now()
	e.zkRestore(zks, ids, false)
	var waiting []Container
	e.waitFor(sessionTimeout+30*time.Second, "every worker sees the rollback", func() bool {
		waiting = waiting[:0]
		for _, w := range holders {
			if e.awaitingRecover(w) {
				waiting = append(waiting, w)
			}
		}
		return len(waiting) == len(holders)
	})
	conn, err := e.st.DialZKAs(e.ctx, e.st.ids.Operator)
	e.must(err, "dial ZooKeeper as the operator")
	defer conn.Close()
	marker := e.rootRecovery(conn)
	waitingOn := e.leaseNodes(waiting)
	// recover through proxies that hold every chunk 5 ms each way (about
	// 20 ms a slot node), cut once it has raised the first slot node: it
	// dies part-way, as on a dropped connection or a killed shell.
	gw, err := gateway(e.ctx, e.st.Network("zk"))
	e.must(err, "the zk network's gateway")
	px, err := e.st.startZKProxies(e.ctx, gw, 3)
	e.must(err, "start the proxies")
	defer px.Close()
	px.SetDelay(5 * time.Millisecond)
	started := time.Now()
	raisedAt := started.Add(initReach - 5*time.Second).UnixMilli() // what recover reserves to, less a margin
	first := zklayout.SlotPath(zkRoot, snowflake.SlotAt(0))
	type ran struct {
		out string
		err error
	}
	done := make(chan ran, 1)
	go func() {
		out, err := e.st.Ctl(e.ctx, "recover", "--zk", px.Addrs(), "--zk-root", zkRoot, "--yes", "--timeout", "10s")
		done <- ran{out, err}
	}()
	e.waitFor(30*time.Second, "recover raising the first slot node", func() bool {
		data, _, err := conn.Get(first)
		if err != nil {
			return false
		}
		rec, err := tree.DecodeSlot(data)
		return err == nil && rec.ReservedUntilMs >= raisedAt
	})
	px.Close()
	r := <-done
	if r.err == nil {
		e.t.Errorf("recover cut part-way succeeded: %s", r.out)
	}
	sm, err := tree.ReadSlotMap(conn, zkRoot)
	e.must(err, "read the slot map")
	raised := 0
	for _, rec := range sm.Slots {
		if rec.ReservedUntilMs >= raisedAt {
			raised++
		}
	}
	if raised == 0 || raised >= snowflake.Slots {
		e.t.Fatalf("the cut left %d of %d slot nodes raised: not part-way, the scenario proves nothing", raised, snowflake.Slots)
	}
	if m := e.rootRecovery(conn); m != marker {
		e.t.Errorf("a recover that failed part-way (%d of %d slot nodes raised) wrote its marker %q into the root: the waiting workers may claim from slots it did not raise", raised, snowflake.Slots, m)
	}
	e.noClaimWhile(10*time.Second, waiting, waitingOn, "the first recover died part-way")
	// recover reserves from its own start (ZooKeeper's time or its clock):
	// at least this start plus the bound, less the skew the suite allows.
	again := time.Now()
	out := e.ctl("recover", "--zk", "zk1:2181,zk2:2181,zk3:2181", "--zk-root", zkRoot, "--yes")
	recoverAt := time.Now()
	if rec := e.slotRecord(snowflake.SlotAt(snowflake.Slots - 1).String()); rec.ReservedUntilMs < again.Add(initReach-10*time.Second).UnixMilli() {
		e.t.Errorf("the second recover left %s reserved until %d, below its bound", snowflake.SlotAt(snowflake.Slots-1), rec.ReservedUntilMs)
	}
	back, _ := e.holdersServe(initReach+recoveryBound+30*time.Second, holders, before, false)
	return result{want: 3, fault: fault, back: back, outage: recoverAt.Sub(fault) + initReach,
		note: fmt.Sprintf("restored a copy a minute old after an election; %d of %d workers waited; recover cut part-way (%d of %d slot nodes raised) left no marker, nobody claimed; run again %.1f s after the fault; every worker serving %.1f s after it; %s",
			len(waiting), len(holders), raised, snowflake.Slots, recoverAt.Sub(fault).Seconds(), back.Sub(recoverAt).Seconds(), strings.ReplaceAll(out, "\n", "; "))}
}

// r3: the second finding of #37. ZooKeeper is restored from a copy taken
// before worker W lost its lease and claimed again; the restored quorum
// keeps its epoch moving on, so sessions survive and nobody is refused,
// and others' creates since the restore number leases/ past every lease
// node W saw: neither a refusal nor the lease sequence shows the restore
// to W. W, cut off during the restore, comes back with its lease gone; it
// reads its lost slot before claiming, finds it at a version below its
// last write, and waits for recover (before #37 it claimed from the
// restored record). The other holders, whose leases the restore kept, go
// on serving.
func restoreKeepsSessions(e env) result {
	holders := e.workers()
	w := holders[len(holders)-1]
	others := holders[:len(holders)-1]
	zks, ids := e.zkCluster()
	e.zkBackup(zks)
	conn, err := e.st.DialZKAs(e.ctx, e.st.ids.Operator)
	e.must(err, "dial ZooKeeper as the operator")
	old := e.status(w)
	e.must(conn.Delete(path.Join(zklayout.LeasesPath(zkRoot), old.LeaseNode), -1), "delete the lease node "+old.LeaseNode)
	conn.Close()
	e.waitFor(sessionTimeout+recoveryBound, w.Short()+" claims again after its lease node was deleted", func() bool {
		s, err := getStatus(e.ctx, w)
		return err == nil && s.Ready && s.LeaseNode != "" && s.LeaseNode != old.LeaseNode
	})
	e.sleep(3 * time.Second) // renews: the slot's version moves past the backup's
	before := e.leaseNodes(holders)
	net := e.st.Network("zk")
	fault := time.Now()
	e.docker("network", "disconnect", net, w.ID)
	e.zkRestore(zks, ids, true)
	conn, err = e.st.DialZKAs(e.ctx, e.st.ids.Operator)
	e.must(err, "dial the restored ZooKeeper as the operator")
	defer conn.Close()
	// Others' creates: leases/ numbered past every lease node W saw.
	for range 50 {
		p, err := conn.Create(zklayout.LeasesPath(zkRoot)+"/dc31-m31-", nil, zk.FlagSequence|zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
		e.must(err, "create a lease node in the restored tree")
		e.must(conn.Delete(p, -1), "delete "+p)
	}
	e.sleep(sessionTimeout + 2*time.Second) // W's restored session expires
	e.docker("network", "connect", net, w.ID)
	healed := time.Now()
	e.waitFor(sessionTimeout+recoveryBound, w.Short()+" sees its lost slot went back and waits for recover", func() bool { return e.awaitingRecover(w) })
	e.noClaimWhile(10*time.Second, []Container{w}, map[string]string{w.ID: before[w.ID]}, "the restore kept sessions; W lost its lease to it")
	for _, o := range others {
		if s, err := getStatus(e.ctx, o); err != nil || !s.Ready || s.LeaseNode != before[o.ID] {
			e.t.Errorf("%s, whose lease the restore kept, does not serve on it: %+v %v", o.Short(), s, err)
		}
	}
	out := e.ctl("recover", "--zk", "zk1:2181,zk2:2181,zk3:2181", "--zk-root", zkRoot, "--yes")
	recoverAt := time.Now()
	back, _ := e.holdersServe(initReach+recoveryBound+30*time.Second, holders, before, false)
	return result{want: 3, fault: fault, back: back, outage: recoverAt.Sub(fault) + initReach,
		note: fmt.Sprintf("restored a copy taken before %s claimed again, the epoch kept (sessions survive), 50 creates since; %s waited for recover %.1f s after its reconnect, the other holders served on; every worker serving %.1f s after recover; %s",
			w.Short(), w.Short(), recoverAt.Sub(healed).Seconds(), back.Sub(recoverAt).Seconds(), strings.ReplaceAll(out, "\n", "; "))}
}
