package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/peterbourgon/ff/v3"
)

// EnvPrefix is the prefix of the environment variables both commands read:
// a flag --zk-root reads SNOWFLAKE_ZK_ROOT (ff's rule: upper case, - to _)
// when the command line does not give it.
const EnvPrefix = "SNOWFLAKE"

// ffEnvError matches ff's error for a flag set from the environment. The
// flag package's own parse errors for typed flags say only "parse error",
// and ff leaves the value out, so without this the operator learns which
// variable is wrong but not what it held.
var ffEnvError = regexp.MustCompile(`^error setting flag "([^"]+)" from environment variable "([^"]+)": (.*)$`)

// ParseError is an error of ff.Parse as one line: without ff's context
// ("error parsing commandline arguments: "), and, for a bad environment
// variable, in the command line's form, naming the flag, the variable and
// its value: the values that fail to parse are durations, numbers and
// enums, never secrets (secrets come from files).
func ParseError(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	for _, p := range []string{"error parsing commandline arguments: ", "error parsing environment variables: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	m := ffEnvError.FindStringSubmatch(msg)
	if m == nil || fs.Lookup(m[1]) == nil {
		return msg
	}
	return fmt.Sprintf("invalid value %q for flag --%s (from environment variable %s): %s", os.Getenv(m[2]), m[1], m[2], m[3])
}

// SetFromEnv sets each flag of fs named in names that the command line
// (already parsed into fs) did not give from its environment variable, by
// ff's rule and with its errors, as snowflaked reads all of its flags. A
// flag not in fs is skipped. The error is ParseError's line.
func SetFromEnv(fs *flag.FlagSet, names ...string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	// A set of its own, sharing the values: fs keeps saying which flags
	// the command line gave.
	env := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	for _, n := range names {
		if f := fs.Lookup(n); f != nil && !given[n] {
			env.Var(f.Value, n, f.Usage)
		}
	}
	if err := ff.Parse(env, nil, ff.WithEnvVarPrefix(EnvPrefix)); err != nil {
		return errors.New(ParseError(env, err))
	}
	return nil
}
