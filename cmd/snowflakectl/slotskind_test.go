package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// slots names each holder's kind and program, in the table and the JSON,
// and counts the embedded leases.
func TestSlotsShowEmbeddedKind(t *testing.T) {
	t.Parallel()
	m := tree.SlotMap{Owned: tree.AllDatacenters, Slots: map[snowflake.Slot]tree.SlotRecord{}, Leases: []zklayout.LeaseInfo{
		{Node: "w", Slot: snowflake.Slot{Machine: 1}, Kind: zklayout.KindWorker, Program: "snowflaked", Addr: "10.0.0.5:7609"},
		{Node: "e", Slot: snowflake.Slot{Machine: 2}, Kind: zklayout.KindEmbedded, Program: "billing"},
	}}
	rep := slotsView(m, "/snowflake", time.Now(), false)
	if rep.Held != 2 || rep.Embedded != 1 || rep.Slots[1].Kind != zklayout.KindEmbedded || rep.Slots[1].Program != "billing" {
		t.Fatalf("report %+v", rep)
	}
	var out bytes.Buffer
	printSlots(&out, rep, "zk:2181")
	text := out.String()
	t.Logf("\n%s", text)
	for _, want := range []string{"KIND", "PROGRAM", "dc00-m02  embedded  billing", "dc00-m01  worker    snowflaked  10.0.0.5:7609",
		"1 of the held slots are embedded leases"} {
		if !strings.Contains(text, want) {
			t.Errorf("slots table lacks %q", want)
		}
	}
}
