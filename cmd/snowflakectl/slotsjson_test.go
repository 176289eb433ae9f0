package main

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestSlotsJSONShapeNamesEveryKey holds the key list that `slots -h` and
// README.md print to the --json output's struct: every top-level key, in
// order, with [...] after the arrays and {...} after the maps.
func TestSlotsJSONShapeNamesEveryKey(t *testing.T) {
	rt := reflect.TypeOf(slotsReport{})
	var keys []string
	for i := range rt.NumField() {
		f := rt.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Type.Kind() {
		case reflect.Slice:
			name += ": [...]"
		case reflect.Map:
			name += ": {...}"
		}
		keys = append(keys, name)
	}
	if want := "{" + strings.Join(keys, ", ") + "}"; slotsJSONShape != want {
		t.Errorf("slotsJSONShape = %s\nthe struct's keys: %s", slotsJSONShape, want)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "`--json` prints `"+slotsJSONShape+"`") {
		t.Errorf("README.md does not say \"`--json` prints `%s`\"", slotsJSONShape)
	}
}
