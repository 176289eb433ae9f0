package worker

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// consRE is one connection of ZooKeeper's cons: its requests received and
// its session.
var consRE = regexp.MustCompile(`recved=(\d+),.*?sid=0x([0-9a-f]+)`)

// sessionRequests reads ZooKeeper's cons: requests received by session.
func sessionRequests(t *testing.T, zkAddr string) map[int64]int64 {
	t.Helper()
	out, err := zktest.FourLetter(zkAddr, "cons", 5*time.Second)
	if err != nil {
		t.Fatalf("cons: %v", err)
	}
	got := map[int64]int64{}
	for _, m := range consRE.FindAllStringSubmatch(out, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		sid, _ := strconv.ParseUint(m[2], 16, 64)
		got[int64(sid)] = n
	}
	return got
}

// TestSlotsOffLeaseSession: /slots and /slots.json read the map (about
// 1,030 requests) on a session that is not the lease's: the lease's
// session receives fewer requests over two reads of the map than one read
// costs, and another session receives them. Before, every read went
// through the lease's session, beside its renewals.
func TestSlotsOffLeaseSession(t *testing.T) {
	zk := startZK(t)
	w := startWorker(t, zk.Addr(), true, nil)
	lease := w.coord.Status().SessionID
	before := sessionRequests(t, zk.Addr())
	if _, ok := before[lease]; !ok {
		t.Fatalf("the lease's session 0x%x is not in cons: %v", lease, before)
	}
	for i, path := range []string{"/slots.json", "/slots"} {
		if i > 0 {
			time.Sleep(slotsCacheTTL + 100*time.Millisecond) // a read of its own
		}
		resp, err := http.Get(w.admin.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		if path == "/slots.json" {
			var v tree.SlotMapView
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Error != "" || len(v.Slots) != 1024 {
				t.Fatalf("/slots.json: %v, error %q, %d slots", err, v.Error, len(v.Slots))
			}
		}
		resp.Body.Close()
	}
	after := sessionRequests(t, zk.Addr())
	if now := w.coord.Status().SessionID; now != lease {
		t.Fatalf("the lease moved to session 0x%x from 0x%x during the test (a loaded machine): cannot compare", now, lease)
	}
	if got := after[lease] - before[lease]; got >= 1024 {
		t.Errorf("the lease's session 0x%x received %d requests during two reads of the slot map: the map is read on it", lease, got)
	}
	var other []string
	for sid, n := range after {
		if sid != lease && n-before[sid] >= 2*1024 {
			other = append(other, fmt.Sprintf("0x%x: %d", sid, n-before[sid]))
		}
	}
	if len(other) != 1 {
		t.Errorf("sessions other than the lease's that received two reads of the map: %v, want one", other)
	}
}
