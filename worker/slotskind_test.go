package worker

import (
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// /slots tells an embedded lease from a worker's: slots.json says its kind
// and program and counts it, the page colours it apart and says so on
// hover and in the legend.
func TestSlotsShowEmbeddedKind(t *testing.T) {
	t.Parallel()
	ws, es := snowflake.Slot{Datacenter: 0, Machine: 1}, snowflake.Slot{Datacenter: 0, Machine: 2}
	m := tree.SlotMap{Owned: tree.AllDatacenters, Slots: map[snowflake.Slot]tree.SlotRecord{}, Leases: []zklayout.LeaseInfo{
		{Node: "w", Slot: ws, Kind: zklayout.KindWorker, Program: "snowflaked", Addr: "10.0.0.5:7609"},
		{Node: "e", Slot: es, Kind: zklayout.KindEmbedded, Program: "billing"},
	}}
	v := m.View("/snowflake", time.Now())
	if v.Counts[tree.SlotHeld] != 2 || v.Embedded != 1 {
		t.Fatalf("counts %v embedded %d; want 2 held, 1 of them embedded", v.Counts, v.Embedded)
	}
	byName := map[string]tree.SlotView{}
	for _, s := range v.Slots {
		byName[s.Slot] = s
	}
	if e := byName[es.String()]; e.Kind != zklayout.KindEmbedded || e.Program != "billing" {
		t.Fatalf("embedded slot view %+v", e)
	}
	if w := byName[ws.String()]; w.Kind != zklayout.KindWorker {
		t.Fatalf("worker slot view %+v", w)
	}
	d := newSlotsPageData(v)
	var cell slotCell
	for _, c := range d.Cells {
		if c.ID == es.String() {
			cell = c
		}
	}
	if cell.Class != "cell held embedded" || !strings.Contains(cell.Title, "kind: embedded") || !strings.Contains(cell.Title, "program: billing") {
		t.Fatalf("embedded cell %+v", cell)
	}
	legend := ""
	for _, li := range d.Legend {
		legend += li.Text + "\n"
	}
	if !strings.Contains(legend, "held by a worker (1)") || !strings.Contains(legend, "(embedded; no ID requests go to it) (1)") {
		t.Fatalf("legend:\n%s", legend)
	}
}
