//go:build integration

package integration

import (
	"fmt"
	"strings"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/snowflake"
)

// s: a container embedding the lease (cmd/idlease-example, package
// coordinator/idlease) beside the workers, killed (-9), paused past its
// session timeout and cut off ZooKeeper in turn, each time while a standby
// worker waits for its slot (the suite holding every other free slot). Its
// IDs join the global checks with the workers'; each fault must hand its
// slot to the standby above its last ID, and it must serve again (on
// another slot) after the heal.
func embeddedFaults(e env) result {
	emb, err := e.st.StartEmbedded(e.ctx)
	e.must(err, "start the embedded lease")
	e.t.Cleanup(func() { _, _ = docker(e.ctx, "rm", "-f", emb.ID) })
	stop := e.col.FollowEmbedded(e.ctx, emb)
	e.t.Cleanup(stop)
	e.embeddedSlot(emb, time.Now(), "", 60*time.Second)
	zk := e.st.Network("zk")
	faults := []struct {
		name        string
		fault, heal []string
	}{
		{"kill -9", []string{"kill", "-s", "KILL", emb.ID}, []string{"start", emb.ID}},
		{"pause", []string{"pause", emb.ID}, []string{"unpause", emb.ID}},
		{"cut", []string{"network", "disconnect", zk, emb.ID}, []string{"network", "connect", zk, emb.ID}},
	}
	workers := 3
	var notes []string
	for _, f := range faults {
		notes = append(notes, f.name+": "+e.embeddedFault(emb, workers, f.fault, f.heal))
		workers++ // the standby that took the slot serves on
	}
	stop()
	e.docker("stop", "-t", "10", emb.ID) // SIGTERM: it releases its slot
	e.docker("rm", "-f", emb.ID)
	n := len(e.col.ContainerIDs(emb.ID))
	if n == 0 {
		e.t.Errorf("no ID collected from the embedded lease")
	}
	return result{want: workers, note: fmt.Sprintf("%d IDs from the embedded lease; %s", n, strings.Join(notes, "; "))}
}

// embeddedFault runs one fault on the embedded container while a standby
// (the n+1th worker) waits: the standby must take its slot, hand-over as c;
// after the heal it must serve again, on another slot.
func (e env) embeddedFault(emb Container, n int, fault, heal []string) string {
	e.t.Helper()
	slot := e.embeddedSlot(emb, time.Now(), "", 30*time.Second)
	p, standby := e.standbyFor(n)
	e.embeddedShortened(slot)
	e.docker(fault...)
	took := e.waitFor(sessionTimeout+standbyHorizon+recoveryBound, "the standby takes the embedded lease's slot", func() bool {
		s, _ := getStatus(e.ctx, standby)
		return s.State == coordinator.StateServing && s.Slot == slot
	})
	e.waitFor(10*time.Second, standby.Short()+" serves IDs on "+slot, func() bool {
		_, _, k := slotRange(e.col.ContainerIDs(standby.ID), slot)
		return k > 0
	})
	p.Release() // free slots for the embedded lease's next claim
	healed := time.Now()
	e.docker(heal...)
	again := e.embeddedSlot(emb, healed, slot, sessionTimeout+recoveryBound)
	hand := e.disjoint(emb, e.fresh(standby), slot)
	return fmt.Sprintf("%s took %s %.1f s after the fault (%s); the embedded lease served again on %s %.1f s after the heal",
		standby.Short(), slot, took.Seconds(), hand, again, time.Since(healed).Seconds())
}

// embeddedSlot waits until the embedded container prints an ID received
// after since on a slot other than not, and returns that slot.
func (e env) embeddedSlot(emb Container, since time.Time, not string, limit time.Duration) string {
	e.t.Helper()
	var slot string
	e.waitFor(limit, "the embedded lease serves IDs", func() bool {
		for _, id := range e.col.ContainerIDsSince(emb.ID, since) {
			if f, err := snowflake.Decode(id); err == nil && f.Slot().String() != not {
				slot = f.Slot().String()
			}
		}
		return slot != ""
	})
	return slot
}

// embeddedShortened waits until the embedded lease's stored reservation is
// no further ahead than the standby horizon (it has no /status: ZooKeeper's
// slot node says it), so that a standby's wait for it stays short.
func (e env) embeddedShortened(slot string) {
	e.t.Helper()
	sl, err := snowflake.ParseSlot(slot)
	e.must(err, "parse slot "+slot)
	conn, err := e.st.DialZK(e.ctx)
	e.must(err, "dial ZooKeeper")
	defer conn.Close()
	e.waitFor(10*time.Second, "the embedded lease shortens its reservation to the standby horizon", func() bool {
		sm, err := tree.ReadSlotMap(conn, zkRoot)
		rec, ok := sm.Slots[sl]
		return err == nil && ok && rec.ReservedUntilMs-time.Now().UnixMilli() <= (standbyHorizon+renew).Milliseconds()
	})
}
