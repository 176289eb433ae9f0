package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/integration/fleettest"
	"github.com/snowfleet/snowfleet/integration/zktest"
)

// One slot-map view (#40 item 4): a worker's /slots.json and slots --json,
// read from the same fleet, are one schema with the same values. They
// differ only where they must: the time each was read at (now, now_ms, and
// ahead_ms and idle_ms, which count from it), and which slots they list
// (/slots.json all 1,024, slots --json the held ones, as its table).
func TestSlotsJSONIsTheWorkersView(t *testing.T) {
	zks := zktest.Start(t)
	root := "/one-view"
	// Renewing every 20 s, the holders leave the slot nodes alone between
	// the two reads (a renew in between is read again).
	var ws []*fleettest.Worker
	for range 2 {
		ws = append(ws, fleettest.Start(t, fleettest.Options{ZK: zks.Addr(), Root: root, Renew: 20 * time.Second, Args: []string{"--standby-horizon", "0"}}))
	}
	for _, w := range ws {
		w.WaitReady(20 * time.Second)
	}
	var page, ctl string
	for try := 0; try < 10; try++ {
		if try > 0 {
			time.Sleep(2100 * time.Millisecond) // past the page's cache of the map
		}
		var pageKeys, ctlKeys []string
		page, pageKeys = sameView(t, workerSlotsJSON(t, ws[0].HTTP), false)
		out := slotsJSONText(t, []string{"--zk", zks.Addr(), "--zk-root", root, "--json"})
		ctl, ctlKeys = sameView(t, out, true)
		if !slices.Equal(pageKeys, ctlKeys) {
			t.Fatalf("top-level keys: /slots.json %v, slots --json %v", pageKeys, ctlKeys)
		}
		if page == ctl {
			break
		}
	}
	if page != ctl {
		t.Fatalf("/slots.json and slots --json differ:\n/slots.json (held slots):\n%s\nslots --json:\n%s", page, ctl)
	}
	if !strings.Contains(ctl, `"state": "held"`) || strings.Count(ctl, `"held": true`) != 2 {
		t.Fatalf("the view holds not the two workers:\n%s", ctl)
	}
}

// sameView decodes a view, drops what depends on when it was read (and,
// for /slots.json, the slots nobody holds), and returns it as JSON to
// compare, with its top-level keys.
func sameView(t *testing.T, data []byte, heldOnly bool) (string, []string) {
	t.Helper()
	var v tree.SlotMapView
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &v); err != nil || json.Unmarshal(data, &keys) != nil || v.Error != "" {
		t.Fatalf("not a readable view: %v %q\n%.500s", err, v.Error, data)
	}
	v.Now, v.NowMs = time.Time{}, 0
	var held []tree.SlotView
	for _, s := range v.Slots {
		if s.AheadMs == nil {
			t.Fatalf("slot %s without ahead_ms: %+v", s.Slot, s)
		}
		s.AheadMs, s.IdleMs = nil, nil
		if s.Held || heldOnly {
			held = append(held, s)
		}
	}
	v.Slots = held
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	return string(out), names
}

func workerSlotsJSON(t *testing.T, addr string) []byte {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/slots.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/slots.json: %d %v", resp.StatusCode, err)
	}
	return b
}

// slotsJSONText is what slots args prints.
func slotsJSONText(t *testing.T, args []string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if rc := runSlots(args, &out, &errb); rc != exitOK {
		t.Fatalf("slots %v rc %d, stderr %s", args, rc, errb.String())
	}
	return out.Bytes()
}
