package worker

import (
	"fmt"
	"html/template"
	"slices"
	"strings"
	"time"

	"github.com/snowfleet/snowfleet/coordinator/tree"
	"github.com/snowfleet/snowfleet/coordinator/zklayout"
)

// The /slots page: the 1,024 slots as a 32 x 32 grid of SVG squares
// (datacenter rows, machine columns), coloured by state, each with a
// <title> a browser shows on hover. No JavaScript; it refreshes itself.
const (
	cellSize  = 16
	cellPitch = 18 // cell and gap
	gridLeft  = 44 // room for the dcNN labels
	gridTop   = 36 // room for the mNN labels
)

type slotsPageData struct {
	V            tree.SlotMapView
	Cells        []slotCell
	RowLabels    []gridLabel
	ColLabels    []gridLabel
	Width        int
	Height       int
	Legend       []legendItem
	Refresh      int
	FleetDCsText string
	// Damaged are the slots whose node holds no slot record: a banner.
	Damaged []string
}

type slotCell struct {
	ID, Class, Title string
	X, Y             int
}

type gridLabel struct {
	Text string
	X, Y int
}

type legendItem struct{ Class, Text string }

// embeddedClass marks a held slot whose holder is an embedded lease.
const embeddedClass = "embedded"

func newSlotsPageData(v tree.SlotMapView) slotsPageData {
	embedded := 0 // the held cells drawn as embedded, beside the workers'
	for _, s := range v.Slots {
		if s.State == tree.SlotHeld && s.Kind == zklayout.KindEmbedded {
			embedded++
		}
	}
	d := slotsPageData{V: v, Width: gridLeft + 32*cellPitch, Height: gridTop + 32*cellPitch, Refresh: 5,
		Legend: []legendItem{
			{tree.SlotHeld, fmt.Sprintf("held by a worker (%d)", v.Counts[tree.SlotHeld]-embedded)},
			{tree.SlotReserved, fmt.Sprintf("reserved, cooling down: no holder, reservation still ahead of the clock (%d)", v.Counts[tree.SlotReserved])},
			{tree.SlotFree, fmt.Sprintf("free (%d)", v.Counts[tree.SlotFree])},
			{tree.SlotOutside, fmt.Sprintf("outside this fleet's datacenters (%d)", v.Counts[tree.SlotOutside])},
		}}
	if embedded > 0 {
		d.Legend = slices.Insert(d.Legend, 1, legendItem{embeddedClass,
			fmt.Sprintf("held by a Go program issuing IDs to itself (embedded; no ID requests go to it) (%d)", embedded)})
	}
	if n := v.Counts[tree.SlotDamaged]; n > 0 {
		d.Legend = append(d.Legend, legendItem{tree.SlotDamaged, fmt.Sprintf("damaged: the slot node holds no slot record, nobody claims it (%d)", n)})
		for _, s := range v.Slots {
			if s.State == tree.SlotDamaged {
				d.Damaged = append(d.Damaged, s.Slot)
			}
		}
	}
	for i := 0; i < 32; i++ {
		d.RowLabels = append(d.RowLabels, gridLabel{fmt.Sprintf("dc%02d", i), gridLeft - 6, gridTop + i*cellPitch + cellSize - 4})
		d.ColLabels = append(d.ColLabels, gridLabel{fmt.Sprintf("m%02d", i), gridLeft + i*cellPitch + cellSize/2, gridTop - 6})
	}
	for _, s := range v.Slots {
		class := "cell " + s.State
		if s.State == tree.SlotHeld && s.Kind == zklayout.KindEmbedded {
			class += " " + embeddedClass
		}
		d.Cells = append(d.Cells, slotCell{
			ID: s.Slot, Class: class, Title: slotTitle(s),
			X: gridLeft + s.Machine*cellPitch, Y: gridTop + s.Datacenter*cellPitch,
		})
	}
	dcs := make([]string, len(v.FleetDatacenters))
	for i, dc := range v.FleetDatacenters {
		dcs[i] = fmt.Sprint(dc)
	}
	if len(dcs) == 32 {
		d.FleetDCsText = "all 32"
	} else {
		d.FleetDCsText = strings.Join(dcs, ", ")
	}
	return d
}

// slotTitle is a cell's hover text: one fact a line.
func slotTitle(s tree.SlotView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", s.Slot, s.State)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "\n%s: %s", k, v)
		}
	}
	when := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.Format("2006-01-02T15:04:05.000Z")
	}
	holder := "holder"
	if s.State != tree.SlotHeld {
		holder = "last holder"
	}
	line("damage", s.Damage)
	line(holder, s.Holder)
	line("kind", s.Kind)
	line("program", s.Program)
	addr := s.Addr
	if s.HTTP != "" {
		addr += " (admin " + s.HTTP + ")"
	}
	line("address", addr)
	host := s.Host
	if s.PID != 0 {
		host = fmt.Sprintf("%s (pid %d)", host, s.PID)
	}
	line("host", host)
	line("version", s.Version)
	line("held since", when(s.HeldSince))
	line("reserved until", when(s.ReservedUntil))
	line("last issued", when(s.LastIssued))
	return b.String()
}

var slotsPage = template.Must(template.New("slots").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="refresh" content="{{.Refresh}}">
<title>snowfleet slot map{{with .V.Root}} of {{.}}{{end}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 16px; color: #222; background: #fff; }
h1 { font-size: 18px; margin: 0 0 8px; }
.banner { background: #fdecea; border: 1px solid #c62828; color: #8e0000; padding: 8px 12px; margin: 8px 0; font-weight: 600; }
.counts { margin: 8px 0; }
.legend span.sw { display: inline-block; width: 12px; height: 12px; vertical-align: -1px; margin: 0 4px 0 12px; border: 1px solid #999; }
svg text { font: 9px monospace; fill: #555; }
.held { fill: #2e7d32; background: #2e7d32; }
.reserved { fill: #f9a825; background: #f9a825; }
.held.embedded, .sw.embedded { fill: #1565c0; background: #1565c0; }
.free { fill: #cfd8dc; background: #cfd8dc; }
.outside { fill: #ffffff; background: #ffffff; }
.damaged { fill: #c62828; background: #c62828; }
rect.outside { stroke: #e0e0e0; }
</style>
</head>
<body>
<h1>snowfleet slot map{{with .V.Root}} of <code>{{.}}</code>{{end}}</h1>
{{with .V.Error}}<div class="banner" id="error" role="alert">Slot map unavailable: {{.}}</div>{{end}}
{{with .Damaged}}<div class="banner" id="damaged" role="alert">Slot nodes that hold no slot record (overwritten by hand?): {{range $i, $s := .}}{{if $i}}, {{end}}{{$s}}{{end}}. Nobody claims these slots until a valid record is written: see the runbook.</div>{{end}}
<div class="counts" id="counts">held {{index .V.Counts "held"}}, reserved (cooling down) {{index .V.Counts "reserved"}}, free {{index .V.Counts "free"}}, outside {{index .V.Counts "outside"}}{{with index .V.Counts "damaged"}}, damaged {{.}}{{end}} of 1024 slots; fleet datacenters: {{.FleetDCsText}}; read at {{.V.Now.Format "2006-01-02T15:04:05Z07:00"}}</div>
<div class="legend" id="legend">{{range .Legend}}<span class="sw {{.Class}}"></span>{{.Text}}{{end}}</div>
{{if .Cells}}<svg xmlns="http://www.w3.org/2000/svg" width="{{.Width}}" height="{{.Height}}" viewBox="0 0 {{.Width}} {{.Height}}" role="img" aria-label="slot map: datacenter rows, machine columns">
{{range .ColLabels}}<text x="{{.X}}" y="{{.Y}}" text-anchor="middle" transform="rotate(-60 {{.X}} {{.Y}})">{{.Text}}</text>
{{end}}{{range .RowLabels}}<text x="{{.X}}" y="{{.Y}}" text-anchor="end">{{.Text}}</text>
{{end}}{{range .Cells}}<rect id="{{.ID}}" class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="16" height="16"><title>{{.Title}}</title></rect>
{{end}}</svg>{{end}}
<p>Rows are datacenters, columns machines; hover a square for its holder and timeline. The same data: <a href="slots.json">slots.json</a>. Refreshes every {{.Refresh}} s.</p>
</body>
</html>
`))
