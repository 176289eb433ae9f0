package zklayout

import (
	"errors"
	"testing"

	"github.com/snowfleet/snowfleet/snowflake"
)

func TestParseLeaseName(t *testing.T) {
	t.Parallel()
	s, seq, err := ParseLeaseName("_c_0123456789abcdef0123456789abcdef-dc07-m13-0000000042")
	if err != nil || s != (snowflake.Slot{Datacenter: 7, Machine: 13}) || seq != 42 {
		t.Fatalf("got %v %d %v", s, seq, err)
	}
	// The protected prefix makes a sort by name wrong; the tail decides.
	h := Holders([]string{"_c_ffff0000ffff0000ffff0000ffff0000-dc01-m02-0000000003",
		"_c_00000000000000000000000000000000-dc01-m02-0000000009"})
	if got := h[snowflake.Slot{Datacenter: 1, Machine: 2}].Seq; got != 3 {
		t.Fatalf("holder seq %d, want 3", got)
	}
	for _, bad := range []string{"dc07-m13", "dc32-m00-0000000001", "x-dc07-m13-123"} {
		if _, _, err := ParseLeaseName(bad); !errors.Is(err, ErrBadLeaseName) {
			t.Errorf("%q: %v, want ErrBadLeaseName", bad, err)
		}
	}
}
