package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// ctlFlag is a flag of one snowflakectl command, as its -h prints it.
type ctlFlag struct{ name, def string }

var (
	usageFlag    = regexp.MustCompile(`^  -([a-z0-9-]+)`)
	usageDefault = regexp.MustCompile(`\(default "?([^")]*)"?\)\s*$`)
)

// commandFlags runs every snowflakectl command with -h and reads the flags
// and defaults it prints.
func commandFlags(t *testing.T) map[string][]ctlFlag {
	t.Helper()
	// Defaults as a user sees them: some come from the environment
	// (TestMain sets SNOWFLAKE_ZK_INSECURE).
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); strings.HasPrefix(k, "SNOWFLAKE_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	out := map[string][]ctlFlag{}
	for name := range commands() {
		var stdout bytes.Buffer
		if code := run([]string{name, "-h"}, input{}, &stdout, io.Discard); code != exitOK {
			t.Fatalf("snowflakectl %s -h: exit %d", name, code)
		}
		lines := strings.Split(stdout.String(), "\n")
		flags := []ctlFlag{}
		for i, l := range lines {
			m := usageFlag.FindStringSubmatch(l)
			if m == nil {
				continue
			}
			f := ctlFlag{name: m[1]}
			for _, desc := range lines[i+1:] {
				if usageFlag.MatchString(desc) {
					break
				}
				if d := usageDefault.FindStringSubmatch(desc); d != nil {
					f.def = d[1]
				}
			}
			flags = append(flags, f)
		}
		out[name] = flags
	}
	if len(out) < 8 {
		t.Fatalf("%d commands", len(out))
	}
	return out
}

// section is a part of the README: its heading and text.
type section struct{ heading, text string }

func readmeSections(t *testing.T) []section {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []section
	cur := section{}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "## ") {
			out = append(out, cur)
			cur = section{heading: strings.TrimPrefix(l, "## ")}
			continue
		}
		cur.text += l + "\n"
	}
	return append(out, cur)
}

// about reports whether a section is about command cmd: headed with its
// name, or naming it in a parenthesised list ("Passwords and TLS (next,
// bench)").
func (s section) about(cmd string) bool {
	if f := strings.Fields(s.heading); len(f) > 0 && f[0] == cmd {
		return true
	}
	if i := strings.LastIndex(s.heading, "("); i >= 0 {
		for _, w := range strings.Split(strings.Trim(s.heading[i:], "()"), ",") {
			if strings.TrimSpace(w) == cmd {
				return true
			}
		}
	}
	return false
}

// mentions reports whether text names --flag, or a --prefix-* that covers
// it.
func mentions(text, flag string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], "--"+flag)
		if j < 0 {
			break
		}
		end := i + j + 2 + len(flag)
		if end == len(text) || !strings.ContainsRune("abcdefghijklmnopqrstuvwxyz0123456789-", rune(text[end])) {
			return true
		}
		i = end
	}
	// A one-letter flag is written as -n.
	if len(flag) == 1 && regexp.MustCompile(`(^|[^-a-z0-9])-`+flag+`([^a-z0-9-]|$)`).MatchString(text) {
		return true
	}
	for _, m := range regexp.MustCompile("--([a-z0-9-]+-)\\*").FindAllStringSubmatch(text, -1) {
		if strings.HasPrefix(flag, m[1]) {
			return true
		}
	}
	return false
}

// TestCommandFlagsDocumented: every flag of every snowflakectl command is in
// README.md, in that command's section (or its row of the commands table);
// a flag most ZooKeeper commands share (--zk, --zk-auth-file, --zk-tls-*,
// --timeout...) may be described once for all. Every flag of a section's
// flags table exists for its command, with the default the table gives.
func TestCommandFlagsDocumented(t *testing.T) {
	all := commandFlags(t)
	sections := readmeSections(t)
	shared := map[string]int{}
	for _, flags := range all {
		for _, f := range flags {
			shared[f.name]++
		}
	}
	whole := ""
	for _, s := range sections {
		whole += s.text
	}
	var names []string
	for name := range all {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, cmd := range names {
		// The command's own text: its sections, and its row of the table of
		// commands (first cell `cmd ...`).
		own := ""
		for _, s := range sections {
			if s.about(cmd) {
				own += s.text
			}
		}
		for _, l := range strings.Split(sections[0].text, "\n") {
			if strings.HasPrefix(l, "| `"+cmd+" ") || strings.HasPrefix(l, "| `"+cmd+"`") {
				own += l + "\n"
			}
		}
		if own == "" {
			t.Errorf("snowflakectl %s: no section and no row of the commands table in README.md", cmd)
			continue
		}
		byName := map[string]ctlFlag{}
		for _, f := range all[cmd] {
			byName[f.name] = f
			if mentions(own, f.name) || shared[f.name] >= len(all)/2 && mentions(whole, f.name) {
				continue
			}
			t.Errorf("snowflakectl %s --%s is not in README.md's text for %s", cmd, f.name, cmd)
		}
		// Flags tables in the command's own sections.
		for _, s := range sections {
			if !s.about(cmd) {
				continue
			}
			inTable := false
			for _, l := range strings.Split(s.text, "\n") {
				if !strings.HasPrefix(l, "|") {
					inTable = false
					continue
				}
				cells := strings.Split(strings.Trim(l, "|"), "|")
				if strings.TrimSpace(cells[0]) == "flag" {
					inTable = true
					continue
				}
				if !inTable || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
					continue
				}
				for _, m := range regexp.MustCompile("`--([a-z0-9-]+)(\\*?)`").FindAllStringSubmatch(cells[0], -1) {
					if m[2] == "*" {
						continue
					}
					f, ok := byName[m[1]]
					if !ok {
						t.Errorf("README.md, %s: the flags table has --%s, which snowflakectl %s does not take", s.heading, m[1], cmd)
						continue
					}
					if len(cells) > 1 {
						if msg := checkCtlDefault(strings.TrimSpace(cells[1]), f.def); msg != "" {
							t.Errorf("README.md, %s: --%s: %s", s.heading, m[1], msg)
						}
					}
				}
			}
		}
	}
}

// checkCtlDefault compares a default cell (one word, or words for a default
// worked out at run time) with the flag's.
func checkCtlDefault(cell, def string) string {
	cell = strings.Trim(cell, "`")
	if cell == "" || strings.ContainsAny(cell, " ,(") {
		return "" // none given, or prose ("all 32")
	}
	zero := def == "" || def == "0" || def == "false" || def == "0s"
	if cell == def || zero && (cell == "0" || cell == "false" || cell == "0s" || cell == "none") {
		return ""
	}
	if a, err1 := time.ParseDuration(cell); err1 == nil {
		if b, err2 := time.ParseDuration(def); err2 == nil && a == b {
			return ""
		}
	}
	return "the table's default is " + cell + ", the flag's is " + def
}
