//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ToolAudit is what snowflakectl audit found in the IDs a run collected,
// placed in the histories snowflakectl history export wrote at its end:
// the operator's tools, from the IDs and the history alone (#41 item 4),
// without what the suite knows (which container served which ID).
type ToolAudit struct {
	IDs          int `json:"ids"`
	DuplicateIDs int `json:"duplicate_ids"`
	NoTenureIDs  int `json:"no_tenure_ids"`
	Overlaps     int `json:"overlapping_tenures_count"`
	InTenureIDs  int `json:"in_tenure_ids"`
	BeforeIDs    int `json:"before_history_ids"`
	LostSpanIDs  int `json:"lost_to_restore_ids"`
	// Exit is audit's exit status: 1 on any finding.
	Exit int `json:"-"`
}

// Findings is how many findings audit reported: IDs issued twice, IDs in
// no tenure, tenures that overlap.
func (a ToolAudit) Findings() int { return a.DuplicateIDs + a.NoTenureIDs + a.Overlaps }

func (a ToolAudit) String() string {
	return fmt.Sprintf("%d IDs: %d issued twice, %d in no tenure, %d overlapping tenures (%d in a tenure, %d before the recorded history, %d in spans a restore lost); exit %d",
		a.IDs, a.DuplicateIDs, a.NoTenureIDs, a.Overlaps, a.InTenureIDs, a.BeforeIDs, a.LostSpanIDs, a.Exit)
}

// BuildCtl builds snowflakectl from the tree into dir and returns its
// path: the operator's tool as it ships, not the image under test (a
// mutant's image carries its patch).
func BuildCtl(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "snowflakectl")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../cmd/snowflakectl").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build snowflakectl: %w: %s", err, out)
	}
	return bin, nil
}

// AuditWithTools writes every ID the collector got into dir, exports the
// histories with ctl (snowflakectl history export, reading the tree as
// the world does) and audits the IDs against them (snowflakectl audit
// --history --json). Run it once the collector has stopped.
func AuditWithTools(ctx context.Context, st *Stack, col *Collector, ctl, dir string) (ToolAudit, error) {
	ids, _, _ := col.IDs()
	idFile := filepath.Join(dir, "ids.txt")
	f, err := os.Create(idFile)
	if err != nil {
		return ToolAudit{}, err
	}
	w := bufio.NewWriter(f)
	for _, id := range ids {
		w.WriteString(strconv.FormatInt(id, 10))
		w.WriteByte('\n')
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return ToolAudit{}, fmt.Errorf("write %s: %w", idFile, err)
	}
	servers, err := st.ZKServers(ctx)
	if err != nil {
		return ToolAudit{}, err
	}
	hist := filepath.Join(dir, "history.json")
	if out, err := exec.CommandContext(ctx, ctl, "history", "export", "--zk", strings.Join(servers, ","), "--zk-root", zkRoot, "--out", hist).CombinedOutput(); err != nil {
		return ToolAudit{}, fmt.Errorf("snowflakectl history export: %w: %s", err, out)
	}
	cmd := exec.CommandContext(ctx, ctl, "audit", "--history", hist, "--json", idFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var a ToolAudit
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		a.Exit = 1
	case err != nil:
		return ToolAudit{}, fmt.Errorf("snowflakectl audit: %w: %s", err, stderr.String())
	}
	if err := json.Unmarshal(out, &a); err != nil {
		return ToolAudit{}, fmt.Errorf("snowflakectl audit --json: %w: %.200s", err, out)
	}
	if a.IDs != len(ids) {
		return a, fmt.Errorf("snowflakectl audit read %d IDs of the %d written", a.IDs, len(ids))
	}
	return a, nil
}
