package configerr

import (
	"errors"
	"testing"
	"time"
)

func TestErrorText(t *testing.T) {
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
