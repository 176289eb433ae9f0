package main

import (
	"flag"
	"fmt"
	"os"
	"regexp"
)

// ffEnvError matches ff's error for a flag set from the environment. The
// flag package's own parse errors for typed flags say only "parse error",
// and ff leaves the value out, so without this the operator learns which
// variable is wrong but not what it held.
var ffEnvError = regexp.MustCompile(`^error setting flag "([^"]+)" from environment variable "([^"]+)": (.*)$`)

// envFlagError rewrites ff's error for a bad environment variable in the
// command line's form, naming the flag, the variable and its value: the
// values that fail to parse are durations, numbers and enums, never
// secrets (secrets come from files). Any other message is returned as is.
func envFlagError(fs *flag.FlagSet, msg string) string {
	m := ffEnvError.FindStringSubmatch(msg)
	if m == nil || fs.Lookup(m[1]) == nil {
		return msg
	}
	return fmt.Sprintf("invalid value %q for flag --%s (from environment variable %s): %s", os.Getenv(m[2]), m[1], m[2], m[3])
}
