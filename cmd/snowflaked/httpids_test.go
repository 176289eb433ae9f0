package main

import (
	"io"
	"strings"
	"testing"
)

// TestHTTPIDsFlags: --http-ids is never the admin port, and
// --http-ids-tls needs it; the errors name the flags.
func TestHTTPIDsFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" = accepted
	}{
		{[]string{"--http-ids", ":7611"}, ""},
		{[]string{"--http-ids", ":7610"}, "--http-ids :7610 is on the admin port (--http :7610)"},
		{[]string{"--http", "127.0.0.1:9000", "--http-ids", "0.0.0.0:9000"}, "is on the admin port"},
		{[]string{"--http-ids", "7611"}, `--http-ids "7611": want host:port`},
		{[]string{"--http-ids-tls"}, "--http-ids-tls needs --http-ids"},
	} {
		_, err := parseFlags(c.args, io.Discard)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
