package cliflag

import (
	"flag"
	"reflect"
	"testing"
)

func TestSplitAddrs(t *testing.T) {
	for in, want := range map[string][]string{
		"a:1,b:2":       {"a:1", "b:2"},
		" a:1 , ,b:2, ": {"a:1", "b:2"},
		",":             nil,
		"":              nil,
	} {
		if got := SplitAddrs(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitAddrs(%q) = %q, want %q", in, got, want)
		}
	}
}

// The flag sets the field and keeps the text as given, for errors.
func TestAddrsFlag(t *testing.T) {
	servers := []string{"127.0.0.1:2181"}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Var(NewAddrs(&servers), "zk", "")
	if got := fs.Lookup("zk").DefValue; got != "127.0.0.1:2181" {
		t.Errorf("default %q, want the field's value", got)
	}
	if err := fs.Parse([]string{"--zk", "h:1, ,h:2"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"h:1", "h:2"}; !reflect.DeepEqual(servers, want) {
		t.Errorf("field %q, want %q", servers, want)
	}
	if got := fs.Lookup("zk").Value.(flag.Getter).Get(); got != "h:1, ,h:2" {
		t.Errorf("Get() = %q, want the text as given", got)
	}
}
