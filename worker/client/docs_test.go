package client_test

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/worker/client"
)

// TestConfigTable: every exported field of Config is a row of README.md's
// Config table, every row is a field, and a default the table gives as a
// number or a duration is DefaultConfig's.
func TestConfigTable(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{} // field -> default cell
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "|") {
			in = false
			continue
		}
		cells := strings.Split(strings.Trim(l, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) >= 2 && cells[0] == "Field" && cells[1] == "Default" {
			in = true
			continue
		}
		if !in || strings.HasPrefix(cells[0], "---") {
			continue
		}
		rows[strings.Trim(cells[0], "`")] = cells[1]
	}
	if len(rows) < 5 {
		t.Fatalf("README.md: %d rows in the Config table (Field | Default | ...)", len(rows))
	}
	def := reflect.ValueOf(client.DefaultConfig())
	typ := def.Type()
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		if !f.IsExported() {
			continue
		}
		cell, ok := rows[f.Name]
		if !ok {
			t.Errorf("Config.%s is not in README.md's Config table", f.Name)
			continue
		}
		delete(rows, f.Name)
		word := strings.Trim(strings.Fields(cell + " ")[0], "`")
		switch v := def.Field(i).Interface().(type) {
		case time.Duration:
			if d, err := time.ParseDuration(word); err != nil || d != v {
				t.Errorf("Config.%s: the table's default is %q, DefaultConfig's %v", f.Name, cell, v)
			}
		case int:
			if n, err := strconv.Atoi(word); err != nil || n != v {
				t.Errorf("Config.%s: the table's default is %q, DefaultConfig's %d", f.Name, cell, v)
			}
		}
	}
	for name := range rows {
		t.Errorf("README.md's Config table has %s, which Config does not", name)
	}
}
