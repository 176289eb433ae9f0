package tree

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/zklayout"
	"github.com/snowfleet/snowfleet/snowflake"
)

// TestSlotMapViewShapeNamesEveryKey holds the key list that snowflakectl
// slots -h and coordinator/README.md print to the view's struct: every
// top-level key, in order, with [...] after the arrays and {...} after
// the maps.
func TestSlotMapViewShapeNamesEveryKey(t *testing.T) {
	t.Parallel()
	rt := reflect.TypeOf(SlotMapView{})
	var keys []string
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Type.Kind() {
		case reflect.Slice:
			if f.Type.Elem().Kind() == reflect.Struct {
				name += ": [...]"
			}
		case reflect.Map:
			name += ": {...}"
		}
		keys = append(keys, name)
	}
	if want := "{" + strings.Join(keys, ", ") + "}"; SlotMapViewShape != want {
		t.Errorf("SlotMapViewShape = %s\nthe struct's keys: %s", SlotMapViewShape, want)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`"+SlotMapViewShape+"`") {
		t.Errorf("coordinator/README.md does not give the view's shape `%s`", SlotMapViewShape)
	}
}

// View: every slot with its state; the counts agree with the slots.
func TestSlotMapView(t *testing.T) {
	t.Parallel()
	now := time.UnixMilli(1_800_000_000_000)
	owned, _ := ParseDCSet("0-1")
	at := func(dc, m int) snowflake.Slot { return snowflake.Slot{Datacenter: dc, Machine: m} }
	m := SlotMap{Owned: owned, Slots: map[snowflake.Slot]SlotRecord{
		at(0, 1): {ReservedUntilMs: now.UnixMilli() + 30_000, LastMs: now.UnixMilli() - 10, Holder: "w"},
		at(0, 2): {ReservedUntilMs: now.UnixMilli() + 5_000, Holder: "gone"},
		at(1, 3): {ReservedUntilMs: now.UnixMilli() - 5_000, Holder: "old"},
	}, Damaged: map[snowflake.Slot]string{at(1, 4): "decode slot node"}, Leases: []zklayout.LeaseInfo{
		{Node: "w", Slot: at(0, 1), Kind: zklayout.KindWorker, Addr: "10.0.0.5:7609", Since: now.Add(-time.Hour)},
		{Node: "e", Slot: at(5, 0), Kind: zklayout.KindEmbedded, Program: "billing"},
	}}
	v := m.View("/r", now)
	if len(v.Slots) != snowflake.Slots || v.Held != 2 || v.Embedded != 1 || v.Used != 3 || v.Owned != 64 || v.Free != 63 || v.Datacenters != "0-1" || len(v.FleetDatacenters) != 2 {
		t.Fatalf("view: %d slots, held %d embedded %d used %d owned %d free %d datacenters %s %v", len(v.Slots), v.Held, v.Embedded, v.Used, v.Owned, v.Free, v.Datacenters, v.FleetDatacenters)
	}
	want := map[string]int{SlotHeld: 2, SlotReserved: 1, SlotDamaged: 1, SlotFree: 64 - 3, SlotOutside: 1024 - 64 - 1}
	if !reflect.DeepEqual(v.Counts, want) {
		t.Errorf("counts %v, want %v", v.Counts, want)
	}
	s := v.Slots[1]
	if s.State != SlotHeld || !s.Held || s.Addr != "10.0.0.5:7609" || s.HeldSince == nil || s.Since == nil || *s.AheadMs != 30_000 || *s.IdleMs != 10 || s.Writer != "w" {
		t.Errorf("held slot %+v", s)
	}
	if s := v.Slots[2]; s.State != SlotReserved || s.Held || s.Holder != "gone" || s.LeaseNode != "" {
		t.Errorf("cooling slot %+v", s)
	}
	if s := v.Slots[32+4]; s.State != SlotDamaged || v.Damaged[s.Slot] != "decode slot node" {
		t.Errorf("damaged slot %+v, damaged %v", s, v.Damaged)
	}
}
