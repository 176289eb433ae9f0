package main

import (
	"io"
	"strings"
	"testing"
)

// TestEnvFlagErrorNamesTheValue: a bad value from the environment is
// reported with the flag, the variable and the value, as one from the
// command line is (ff and the flag package alone say only "parse error").
func TestEnvFlagErrorNamesTheValue(t *testing.T) {
	for _, tc := range []struct{ env, value, want string }{
		{"SNOWFLAKE_RENEW", "fast", `invalid value "fast" for flag --renew (from environment variable SNOWFLAKE_RENEW)`},
		{"SNOWFLAKE_MAX_CONNS", "many", `invalid value "many" for flag --max-conns (from environment variable SNOWFLAKE_MAX_CONNS)`},
		{"SNOWFLAKE_ON_CLOCK_BACK", "wait", `invalid value "wait" for flag --on-clock-back (from environment variable SNOWFLAKE_ON_CLOCK_BACK)`},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			_, err := parseFlags([]string{"--zk-insecure"}, io.Discard)
			if err == nil {
				t.Fatalf("%s=%s: no error", tc.env, tc.value)
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("%s=%s: error %q, want it to start %q", tc.env, tc.value, err, tc.want)
			}
		})
	}
}
