package configerr

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestErrorText(t *testing.T) {
	t.Parallel()
	cause := errors.New("missing port")
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{&Error{Field: "Horizon", Value: time.Second, Reason: "must exceed Renew 1s"}, "config Horizon 1s must exceed Renew 1s"},
		{&Error{Field: "Root", Value: "snowflake", Reason: "is not absolute"}, `config Root "snowflake" is not absolute`},
		{&Error{Field: "Servers", Value: []string{"a", ""}, Reason: "contains an empty address"}, `config Servers ["a" ""] contains an empty address`},
		{&Error{Field: "Servers", Reason: "empty"}, "config Servers: empty"},
		{&Error{Field: "Auth", Err: cause}, "config Auth: missing port"},
		{&Error{Field: "Static", Value: "zk", Reason: "is not host:port", Err: cause}, `config Static "zk" is not host:port: missing port`},
		{&Error{Field: "MaxConns", Value: -1, Reason: "is out of range"}, "config MaxConns -1 is out of range"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// Renamed renames a config error's field, wrapped or not, leaves the
// original as it was, keeps its cause, and passes other errors unchanged.
func TestRenamed(t *testing.T) {
	t.Parallel()
	cause := errors.New("no such file")
	orig := &Error{Field: "MaxLead", Value: time.Second, Reason: "must be positive", Err: cause}
	err := Renamed(fmt.Errorf("wrapped: %w", orig), func(f string) string { return "MaxClock" + f[3:] })
	var ce *Error
	if !errors.As(err, &ce) || ce.Field != "MaxClockLead" || !errors.Is(err, cause) {
		t.Fatalf("Renamed = %v; want the field MaxClockLead and the cause kept", err)
	}
	if orig.Field != "MaxLead" {
		t.Fatalf("Renamed changed the original: %q", orig.Field)
	}
	plain := errors.New("not a config error")
	if got := Renamed(plain, func(string) string { return "x" }); got != plain {
		t.Fatalf("Renamed(%v) = %v; want it unchanged", plain, got)
	}
	if Renamed(nil, func(string) string { return "x" }) != nil {
		t.Fatal("Renamed(nil) is not nil")
	}
}
