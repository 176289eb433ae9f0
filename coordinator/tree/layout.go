package tree

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/snowfleet/snowfleet/snowflake"
)

// Layout names this znode layout; a root written for another layout (or
// another ID epoch or bit split) is refused, so two incompatible fleets never
// share a root. Every one of the 1,024 slot nodes exists from the root's
// making on (by snowflakectl init), so a missing slot node is damage, never
// "first use".
const Layout = "snowfleet/slots/v2"

// LayoutV1 was the first layout: slot nodes were made at first use, at
// floor 0. No v1 fleet exists outside this repository's history (no release
// was tagged with it): a v1 root is refused, never upgraded.
const LayoutV1 = "snowfleet/slots/v1"

// LayoutV3 is a root that owns only some datacenters: RootInfo.Datacenters
// names them, and every slot node exists, as in v2. A root that owns all 32
// stays v2 (a v2 build claiming anywhere is right for it); a root that owns
// fewer must not be joined by a v2 build, which ignores the field and would
// claim outside the range, hence the new name, which v2 builds refuse.
const LayoutV3 = "snowfleet/slots/v3"

// LayoutFilling is a root whose slot nodes snowflakectl init is still
// making (or stopped making): RootInfo.Datacenters names its ranges.
// Workers wait until it is finished; init run again finishes it.
const LayoutFilling = "snowfleet/slots/filling"

// layoutMarker starts every layout name: a znode whose JSON layout starts
// with it is a fleet's root, wherever it sits in an ensemble.
const layoutMarker = "snowfleet/slots/"

// ErrLayoutMismatch: the root znode was made for another layout or epoch.
var ErrLayoutMismatch = errors.New("root znode was made for another layout")

// ErrDamaged: a node the layout promises (the root, leases/, slots/ or a
// slot node) is missing. Workers never re-create it; an operator does, with
// snowflakectl repair.
var ErrDamaged = errors.New("znode tree damaged")

// ErrRootFilling: snowflakectl init made the root but has not made all its
// slot nodes yet (or stopped before it had); running init again finishes it.
var ErrRootFilling = errors.New("root is still being filled by snowflakectl init")

// RootInfo is the JSON of the root znode.
type RootInfo struct {
	// Layout is the layout name, Layout.
	Layout string `json:"layout"`
	// EpochMs is the ID epoch in Unix ms, snowflake.Epoch.
	EpochMs int64 `json:"epoch_ms"`
	// Bits is the ID's bit split: timestamp/datacenter/machine/sequence.
	Bits string `json:"bits"`
	// Created is when the root was made (informational).
	Created time.Time `json:"created"`
	// Datacenters are the datacenter IDs the fleet owns, as ranges such as
	// "0-3,8" (DCSet's form); set in a v3 or filling root only. A v2 root
	// owns all 32.
	Datacenters string `json:"datacenters,omitempty"`
	// MaxHorizonMs and MaxSkewMs are the fleet's bound on its workers'
	// Horizon and MaxSkew (0: DefaultMaxHorizon, DefaultMaxSkew). A holder
	// within them never confirms a ceiling more than their sum past
	// ZooKeeper's time of its last write, so a root made again after the
	// ensemble lost its data reserves its slots that far past the make, and
	// workers above the bound are refused (ErrAboveRootBound).
	MaxHorizonMs int64 `json:"max_horizon_ms,omitempty"`
	MaxSkewMs    int64 `json:"max_skew_ms,omitempty"`
	// Recovery names the last snowflakectl recover run on this root (a
	// random token and its time): a worker that saw the ensemble go back in
	// time claims again only once it changes.
	Recovery string `json:"recovery,omitempty"`
}

// DefaultMaxHorizon is the bound on Horizon a root records unless init is
// told otherwise: the daemon's default horizon (coordinator.DefaultHorizon
// is this bound, so that a worker with default flags fits a root made with
// default flags).
const DefaultMaxHorizon = 40 * time.Second

// DefaultMaxSkew is the bound on MaxSkew a root records unless init is told
// otherwise: the daemon's default.
const DefaultMaxSkew = time.Second

// MaxHorizon is the root's bound on its workers' Horizon.
func (r RootInfo) MaxHorizon() time.Duration {
	if r.MaxHorizonMs <= 0 {
		return DefaultMaxHorizon
	}
	return time.Duration(r.MaxHorizonMs) * time.Millisecond
}

// MaxSkew is the root's bound on its workers' MaxSkew.
func (r RootInfo) MaxSkew() time.Duration {
	if r.MaxSkewMs <= 0 {
		return DefaultMaxSkew
	}
	return time.Duration(r.MaxSkewMs) * time.Millisecond
}

// Reach is the most a holder of this root can have confirmed past
// ZooKeeper's time of its last write: the bound on the horizon plus the
// skew a holder may run ahead with and still drive its reservation.
func (r RootInfo) Reach() time.Duration { return r.MaxHorizon() + r.MaxSkew() }

// CurrentRootInfo is what this build's root holds once every slot node is
// made.
func CurrentRootInfo(now time.Time) RootInfo { return NewRootInfo(Layout, now) }

func NewRootInfo(layout string, now time.Time) RootInfo {
	return RootInfo{
		Layout:  layout,
		EpochMs: snowflake.Epoch,
		Bits: fmt.Sprintf("%d/%d/%d/%d", snowflake.TimestampBits, snowflake.DatacenterBits,
			snowflake.MachineBits, snowflake.SequenceBits),
		Created: now.UTC(),
	}
}

// Compatible reports whether a root written as r can be used by this build:
// Layout, LayoutV3 or LayoutFilling (which init finishes), with the ranges
// its layout calls for. A v1 root is refused with its own message.
func (r RootInfo) Compatible() error {
	want := CurrentRootInfo(time.Time{})
	if r.Layout == LayoutV1 {
		return fmt.Errorf("%w: root has layout %s, which made slot nodes at first use; no v1 fleet exists outside development and this build does not upgrade one: delete the root and run snowflakectl init",
			ErrLayoutMismatch, LayoutV1)
	}
	known := r.Layout == Layout || r.Layout == LayoutV3 || r.Layout == LayoutFilling
	if !known || r.EpochMs != want.EpochMs || r.Bits != want.Bits {
		return fmt.Errorf("%w: root has layout %q epoch_ms %d bits %q, this build wants layout %q epoch_ms %d bits %q",
			ErrLayoutMismatch, r.Layout, r.EpochMs, r.Bits, want.Layout, want.EpochMs, want.Bits)
	}
	if r.MaxHorizonMs < 0 || r.MaxSkewMs < 0 {
		return fmt.Errorf("%w: root has a negative bound (max_horizon_ms %d, max_skew_ms %d)", ErrLayoutMismatch, r.MaxHorizonMs, r.MaxSkewMs)
	}
	_, err := r.Owned()
	return err
}

// Owned is the set of datacenters the root owns: all 32 for v2,
// RootInfo.Datacenters (required, never empty) for v3 and a filling root.
// A v2 root that names ranges was not written by snowfleet: refused rather
// than read as all 32 or as its ranges.
func (r RootInfo) Owned() (DCSet, error) {
	switch r.Layout {
	case LayoutV3, LayoutFilling:
		set, err := ParseDCSet(r.Datacenters)
		if err != nil {
			return 0, fmt.Errorf("%w: layout %s: datacenters: %w", ErrLayoutMismatch, r.Layout, err)
		}
		return set, nil
	}
	if r.Datacenters != "" {
		return 0, fmt.Errorf("%w: layout %s names datacenters %q, which only %s does", ErrLayoutMismatch, r.Layout, r.Datacenters, LayoutV3)
	}
	return AllDatacenters, nil
}

// Filling reports a root whose slot nodes are still being made by init.
func (r RootInfo) Filling() bool { return r.Layout == LayoutFilling }

// Finished is the root a filling root becomes once every slot node
// exists: v2 when it owns all 32 datacenters, v3 otherwise.
func (r RootInfo) Finished() RootInfo {
	owned, _ := r.Owned()
	r.Layout, r.Datacenters = Layout, ""
	if owned != AllDatacenters {
		r.Layout, r.Datacenters = LayoutV3, owned.String()
	}
	return r
}

// slotData is the JSON of a slot node. reserved_until and updated repeat
// the ms fields as times for a person reading the node in zkCli; readers use
// the ms fields.
type slotData struct {
	ReservedUntilMs int64  `json:"reserved_until_ms"`
	LastMs          int64  `json:"last_ms"`
	Holder          string `json:"holder"`
	UpdatedMs       int64  `json:"updated_ms"`
	BoundMs         int64  `json:"bound_ms,omitempty"`
	ReservedUntil   string `json:"reserved_until,omitempty"`
	Updated         string `json:"updated,omitempty"`
	// History is left out when empty: a record without one reads the same
	// to a build that does not know it, and one with it too (JSON).
	History *History `json:"history,omitempty"`
}

// data is r as stored, without the readable times EncodeSlot adds.
func (r SlotRecord) data() slotData {
	d := slotData{ReservedUntilMs: r.ReservedUntilMs, LastMs: r.LastMs, Holder: r.Holder, UpdatedMs: r.UpdatedMs, BoundMs: r.BoundMs}
	if !r.History.Empty() {
		h := r.History
		d.History = &h
	}
	return d
}

func EncodeSlot(r SlotRecord) []byte {
	d := r.data()
	if r.ReservedUntilMs > 0 {
		d.ReservedUntil = time.UnixMilli(r.ReservedUntilMs).UTC().Format(time.RFC3339Nano)
	}
	if r.UpdatedMs > 0 {
		d.Updated = time.UnixMilli(r.UpdatedMs).UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.MarshalIndent(d, "", "  ")
	return b
}

// ErrNoReservation: a slot node decodes but carries no valid reservation
// (empty data, {}, null, no reserved_until_ms, or one before the ID epoch).
// An empty node is the natural hand "fix" of a missing one in zkCli; read as
// floor 0 it would let a successor repeat its predecessor's IDs, so it is
// damage, like a node that does not decode.
var ErrNoReservation = errors.New("slot node carries no valid reservation")

// DecodeSlot reads a slot node's JSON. A record without a valid
// reservation is an error wrapping ErrNoReservation: never floor 0.
func DecodeSlot(b []byte) (SlotRecord, error) {
	if len(strings.TrimSpace(string(b))) == 0 {
		return SlotRecord{}, fmt.Errorf("%w: the node is empty (made by hand?)", ErrNoReservation)
	}
	var d struct {
		slotData
		// Reserved tells a missing reserved_until_ms from a zero one.
		Reserved *int64 `json:"reserved_until_ms"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return SlotRecord{}, fmt.Errorf("decode slot node: %w", err)
	}
	switch {
	case d.Reserved == nil:
		return SlotRecord{}, fmt.Errorf("%w: no reserved_until_ms in %.40q", ErrNoReservation, b)
	case *d.Reserved < snowflake.MinUnixMs || *d.Reserved > snowflake.MaxUnixMs:
		return SlotRecord{}, fmt.Errorf("%w: reserved_until_ms %d is outside the ID's range %d..%d",
			ErrNoReservation, *d.Reserved, snowflake.MinUnixMs, snowflake.MaxUnixMs)
	}
	rec := SlotRecord{ReservedUntilMs: *d.Reserved, LastMs: d.LastMs, Holder: d.Holder, UpdatedMs: d.UpdatedMs, BoundMs: d.BoundMs}
	if d.History != nil {
		rec.History = *d.History
	}
	return rec, nil
}

func EncodeRoot(r RootInfo) []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return b
}

// DecodeRoot reads the root's JSON and refuses a root this build cannot use.
func DecodeRoot(root string, data []byte) (RootInfo, error) {
	info, err := decodeRootJSON(root, data)
	if err != nil {
		return RootInfo{}, err
	}
	if err := info.Compatible(); err != nil {
		return RootInfo{}, fmt.Errorf("root %s: %w", root, err)
	}
	return info, nil
}

// decodeRootJSON reads the root's JSON, whatever layout it names.
func decodeRootJSON(root string, data []byte) (RootInfo, error) {
	var info RootInfo
	if err := json.Unmarshal(data, &info); err != nil || len(data) == 0 {
		return RootInfo{}, fmt.Errorf("%w: root %s holds no layout JSON (%v)", ErrLayoutMismatch, root, err)
	}
	return info, nil
}
