package main

import (
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/snowfleet/snowfleet/coordinator/idlease"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/worker/client"
)

// The tests here keep the docs true: they read what the code does (the
// flags snowflaked parses, the metrics it registers) and compare it with
// the tables of the READMEs, both ways.

// mdTable is one Markdown table: its header cells and its rows, each with
// the line it is on.
type mdTable struct {
	file   string
	header []string
	rows   []mdRow
}

type mdRow struct {
	line  int
	cells []string
}

// readTables returns every table of a Markdown file (fenced code skipped).
func readTables(t *testing.T, file string) []mdTable {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []mdTable
	var cur *mdTable
	fence := false
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(l, "|") {
			cur = nil
			continue
		}
		cells := splitRow(l)
		switch {
		case cur == nil:
			out = append(out, mdTable{file: file, header: cells})
			cur = &out[len(out)-1]
		case len(cur.rows) == 0 && strings.Trim(strings.Join(cells, ""), "-: ") == "":
			// the |---| line
		default:
			cur.rows = append(cur.rows, mdRow{line: i + 1, cells: cells})
		}
	}
	return out
}

// splitRow splits a table row on the | that are not escaped (\|) and not
// inside a code span.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(strings.TrimSuffix(l, "|"), "|")
	var cells []string
	var cell strings.Builder
	code := false
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case c == '\\' && i+1 < len(l) && l[i+1] == '|':
			cell.WriteByte('|')
			i++
		case c == '`':
			code = !code
			cell.WriteByte(c)
		case c == '|' && !code:
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(c)
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

var codeSpan = regexp.MustCompile("`([^`]*)`")

// spans are the code spans of a cell.
func spans(cell string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// repoFile is a path from the repository's root.
func repoFile(p string) string { return filepath.Join("..", "..", p) }

// markdownFiles are the repository's tracked Markdown files.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", repoFile("."), "ls-files", "*.md").Output()
	if err != nil {
		t.Skipf("git ls-files: %v (not a git checkout)", err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		files = append(files, repoFile(f))
	}
	if len(files) < 5 {
		t.Fatalf("git ls-files found %d Markdown files", len(files))
	}
	return files
}

// TestFlagsTable: every flag snowflaked parses (what --help prints) has a
// row in cmd/snowflaked/README.md's flags table with its environment
// variable and its default, and every flag of the table exists.
func TestFlagsTable(t *testing.T) {
	o, err := parseFlags([]string{"-h"}, io.Discard)
	if err != errHelp {
		t.Fatalf("parseFlags -h: %v", err)
	}
	code := map[string]*flag.Flag{}
	o.fs.VisitAll(func(f *flag.Flag) { code[f.Name] = f })

	var table *mdTable
	for _, tb := range readTables(t, "README.md") {
		if len(tb.header) >= 3 && tb.header[0] == "flag" && tb.header[1] == "env var" && tb.header[2] == "default" {
			table = &tb
			break
		}
	}
	if table == nil {
		t.Fatal("README.md has no table with the columns flag, env var, default")
	}
	documented := map[string]bool{}
	for _, r := range table.rows {
		names := spans(r.cells[0])
		envs := spans(r.cells[1])
		for i, n := range names {
			name, ok := strings.CutPrefix(n, "--")
			if !ok {
				t.Errorf("README.md:%d: %q is not a --flag", r.line, n)
				continue
			}
			documented[name] = true
			f := code[name]
			if f == nil {
				t.Errorf("README.md:%d: --%s is in the table, snowflaked has no such flag", r.line, name)
				continue
			}
			if name != "version" {
				want := "SNOWFLAKE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
				if i >= len(envs) || envs[i] != want {
					t.Errorf("README.md:%d: --%s's variable is %v, want %s", r.line, name, envs, want)
				}
			}
			if msg := checkDefault(r.cells[2], f.DefValue); msg != "" {
				t.Errorf("README.md:%d: --%s: %s", r.line, name, msg)
			}
		}
	}
	for name := range code {
		if !documented[name] {
			t.Errorf("--%s (snowflaked --help) is not in README.md's flags table", name)
		}
	}
}

// checkDefault compares a table's default cell with the flag's: a code
// span must be the default (an empty default may be written as the zero it
// stands for); a cell without one (none, or words) is only for a flag whose
// default is empty or zero, worked out at run time.
func checkDefault(cell, def string) string {
	zero := def == "" || def == "0" || def == "false" || def == "0s"
	sp := spans(cell)
	if len(sp) == 0 {
		if zero || strings.TrimSpace(cell) == def {
			return ""
		}
		return "the table gives no default (" + cell + "), the flag's is " + def
	}
	if sp[0] == def || zero && (sp[0] == "0" || sp[0] == "0s" || sp[0] == "false" || sp[0] == `""`) {
		return ""
	}
	return "the table's default is " + sp[0] + ", the flag's is " + def
}

// metricDesc is a metric as registered: its name and labels (variable and
// constant).
type metricDesc struct {
	name   string
	labels []string
}

var descRE = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", help: ".*", constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

// describe lists what a registry holds, from its descriptors: a vector
// with no series yet is there too.
func describe(t *testing.T, reg *prometheus.Registry, into map[string]metricDesc) {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() { reg.Describe(ch); close(ch) }()
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		if !strings.HasPrefix(m[1], "snowflake_") {
			continue // the Go and process collectors
		}
		var labels []string
		for _, kv := range strings.Split(m[2], ",") {
			if k, _, ok := strings.Cut(kv, "="); ok {
				labels = append(labels, k)
			}
		}
		for _, l := range strings.Split(m[3], ",") {
			if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		into[m[1]] = metricDesc{name: m[1], labels: labels}
	}
}

// daemonRegistry is the registry of a snowflaked made by newDaemon with
// args (no ZooKeeper needed: nothing is dialled until it runs).
func daemonRegistry(t *testing.T, args ...string) *prometheus.Registry {
	t.Helper()
	o, err := parseFlags(append([]string{"--zk-insecure", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"}, args...), io.Discard)
	if err != nil {
		t.Fatalf("flags %v: %v", args, err)
	}
	d, err := newDaemon(o, hclog.NewNullLogger())
	if err != nil {
		t.Fatalf("newDaemon %v: %v", args, err)
	}
	t.Cleanup(func() {
		for _, c := range []io.Closer{d.ln, d.httpLn} {
			if c != nil {
				c.Close()
			}
		}
		if d.tls != nil && d.tls.ln != nil {
			d.tls.ln.Close()
		}
		if d.ids != nil {
			d.ids.ln.Close()
		}
	})
	return d.reg
}

// registered is every snowflake_* metric the code registers: a daemon's
// (plain, and with every TLS listener, whose reloads are counted), an
// embedded lease's, and the Go client's.
func registered(t *testing.T) map[string]metricDesc {
	t.Helper()
	all := map[string]metricDesc{}
	describe(t, daemonRegistry(t), all)
	certs := zktest.NewCerts(t)
	describe(t, daemonRegistry(t, "--tls-listen", "127.0.0.1:0", "--tls-cert-file", certs.ServerFile,
		"--tls-key-file", certs.ServerFile, "--tls-auth-clients", "no", "--http-tls",
		"--http-ids", "127.0.0.1:0", "--http-ids-tls"), all)

	reg := prometheus.NewRegistry()
	lc := idlease.DefaultConfig()
	lc.Insecure = true
	l, err := idlease.New(lc, nil, reg)
	if err != nil {
		t.Fatalf("idlease.New: %v", err)
	}
	defer func() { _ = l.Close() }()
	describe(t, reg, all)

	reg = prometheus.NewRegistry()
	cc := client.DefaultConfig()
	cc.Static = []string{"127.0.0.1:1"}
	c, err := client.New(cc, nil, reg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	defer c.Close()
	describe(t, reg, all)
	return all
}

var tableMetric = regexp.MustCompile(`^(snowflake_[a-z0-9_]+)(?:\{([a-z0-9_, ]*)\})?$`)

// documentedLabels are the label names of a labels cell: its code spans
// outside parentheses (inside them are values and examples).
func documentedLabels(cell string) []string {
	var out strings.Builder
	depth := 0
	for _, c := range cell {
		switch {
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case depth == 0:
			out.WriteRune(c)
		}
	}
	return spans(out.String())
}

// TestMetricsTables: every metric registered (by snowflaked, an embedded
// lease and the Go client) is in a metrics table of a README with its
// labels, and every metric of a table is registered with those labels. A
// table row names a metric as `name` or `name{label,...}` in its first
// cell; a labels column, when the table has one, gives the labels instead.
func TestMetricsTables(t *testing.T) {
	reg := registered(t)
	if len(reg) < 30 {
		t.Fatalf("found %d registered metrics: too few, the registries were not read", len(reg))
	}
	seen := map[string]bool{}
	for _, file := range markdownFiles(t) {
		for _, tb := range readTables(t, file) {
			labelsCol := slices.IndexFunc(tb.header, func(h string) bool { return strings.EqualFold(h, "labels") })
			for _, r := range tb.rows {
				sp := spans(r.cells[0])
				if len(sp) != 1 {
					continue
				}
				m := tableMetric.FindStringSubmatch(sp[0])
				if m == nil {
					continue
				}
				name := m[1]
				var labels []string
				for _, l := range strings.Split(m[2], ",") {
					if l = strings.TrimSpace(l); l != "" {
						labels = append(labels, l)
					}
				}
				if labelsCol > 0 && labelsCol < len(r.cells) {
					labels = append(labels, documentedLabels(r.cells[labelsCol])...)
				}
				slices.Sort(labels)
				rel := strings.TrimPrefix(file, repoFile(".")+"/")
				d, ok := reg[name]
				if !ok {
					t.Errorf("%s:%d: %s is in a metrics table, nothing registers it", rel, r.line, name)
					continue
				}
				seen[name] = true
				if !slices.Equal(labels, d.labels) {
					t.Errorf("%s:%d: %s has labels %v in the table, %v registered", rel, r.line, name, labels, d.labels)
				}
			}
		}
	}
	var missing []string
	for name, d := range reg {
		if !seen[name] {
			missing = append(missing, name+"{"+strings.Join(d.labels, ",")+"}")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("%s is registered and in no metrics table", m)
	}
	t.Logf("%d metrics registered, %d in the tables", len(reg), len(seen))
}

// runbookSections are deploy/runbook.md's sections by heading, each with
// its text up to the next heading of any level.
func runbookSections(t *testing.T) (map[string]string, string) {
	t.Helper()
	b, err := os.ReadFile(repoFile("deploy/runbook.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	var head string
	var body strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(l, "#"), " "); ok && strings.HasPrefix(l, "#") {
			sections[head] = body.String()
			head = strings.TrimSpace(h)
			body.Reset()
			continue
		}
		body.WriteString(l + "\n")
	}
	sections[head] = body.String()
	return sections, string(b)
}

// TestRunbookCoversAlertsAndLossReasons: every alert of
// deploy/prometheus/rules.yml has a runbook section headed with its name,
// which its runbook_url points at, and the SnowflakeLeaseLost section names
// every reason the coordinator counts lease losses by (read from its
// registry: the reasons are exported at 0 from the start).
func TestRunbookCoversAlertsAndLossReasons(t *testing.T) {
	sections, _ := runbookSections(t)
	rules, err := os.ReadFile(repoFile("deploy/prometheus/rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	alertRE := regexp.MustCompile(`(?m)^\s*- alert: (\w+)\s*$`)
	urlRE := regexp.MustCompile(`runbook_url: \S*deploy/runbook\.md#(\S+)`)
	blocks := alertRE.FindAllStringSubmatchIndex(string(rules), -1)
	if len(blocks) < 5 {
		t.Fatalf("rules.yml: %d alerts found", len(blocks))
	}
	for i, m := range blocks {
		name := string(rules[m[2]:m[3]])
		end := len(rules)
		if i+1 < len(blocks) {
			end = blocks[i+1][0]
		}
		if _, ok := sections[name]; !ok {
			t.Errorf("alert %s has no runbook section headed %q", name, name)
		}
		u := urlRE.FindSubmatch(rules[m[0]:end])
		if u == nil || string(u[1]) != strings.ToLower(name) {
			t.Errorf("alert %s: runbook_url anchor %q, want #%s", name, u, strings.ToLower(name))
		}
	}

	mfs, err := daemonRegistry(t).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, mf := range mfs {
		if mf.GetName() != "snowflake_coordinator_lease_losses_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "reason" {
					reasons = append(reasons, lp.GetValue())
				}
			}
		}
	}
	if len(reasons) < 3 {
		t.Fatalf("snowflake_coordinator_lease_losses_total has reasons %v: not read from the registry", reasons)
	}
	lost := sections["SnowflakeLeaseLost"]
	for _, r := range reasons {
		if !strings.Contains(lost, "`"+r+"`") {
			t.Errorf("the runbook's SnowflakeLeaseLost section does not name the lease-loss reason `%s`", r)
		}
	}
}

// TestRunbookFollowsDefaults: wherever the runbook gives a flag's value as
// its default ("`--horizon` (default 40 s)", "`--session-timeout`, 6 s"),
// it is snowflaked's default.
func TestRunbookFollowsDefaults(t *testing.T) {
	o, err := parseFlags([]string{"-h"}, io.Discard)
	if err != errHelp {
		t.Fatalf("parseFlags -h: %v", err)
	}
	_, text := runbookSections(t)
	text = strings.Join(strings.Fields(text), " ")
	re := regexp.MustCompile("`--([a-z-]+)`,? \\((?:default )?([0-9.]+) ?(ms|s|m)\\)|`--([a-z-]+)`, ([0-9.]+) ?(ms|s|m)\\b")
	n := 0
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		name, num, unit := m[1], m[2], m[3]
		if name == "" {
			name, num, unit = m[4], m[5], m[6]
		}
		f := o.fs.Lookup(name)
		if f == nil {
			t.Errorf("runbook: %q names no snowflaked flag", m[0])
			continue
		}
		n++
		said, err1 := time.ParseDuration(num + unit)
		def, err2 := time.ParseDuration(f.DefValue)
		if err1 != nil || err2 != nil || said != def {
			t.Errorf("runbook: %q, but --%s defaults to %s", m[0], name, f.DefValue)
		}
	}
	if n == 0 {
		t.Fatal("the runbook gives no flag's default: the pattern no longer matches how it writes them")
	}
	t.Logf("%d defaults checked", n)
}
