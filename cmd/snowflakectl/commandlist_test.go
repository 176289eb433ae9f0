package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// Every list of snowflakectl's commands in the front door (a line linking
// cmd/snowflakectl/README.md and listing commands) names every command
// (#40 item 6: it listed 8, then 6, of 12).
func TestFrontDoorListsEveryCommand(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lists := 0
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.Contains(line, "cmd/snowflakectl/README.md") || !strings.Contains(line, "operator's tool") {
			continue
		}
		lists++
		for name := range commands() {
			if !regexp.MustCompile(`\b` + name + `\b`).MatchString(line) {
				t.Errorf("the README's list of snowflakectl's commands lacks %s: %s", name, line)
			}
		}
	}
	if lists == 0 {
		t.Fatal("README.md has no list of snowflakectl's commands (a line linking cmd/snowflakectl/README.md as the operator's tool)")
	}
}
