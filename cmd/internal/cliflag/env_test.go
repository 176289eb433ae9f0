package cliflag

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// SetFromEnv reads the flags named, and only those, from the environment,
// never over the command line, and keeps fs saying which flags the command
// line gave.
func TestSetFromEnv(t *testing.T) {
	t.Setenv("SNOWFLAKE_ZK_ROOT", "/from-env")
	t.Setenv("SNOWFLAKE_ZK", "env:2181")
	t.Setenv("SNOWFLAKE_DATACENTER", "7")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	root := fs.String("zk-root", "/snowflake", "")
	zk := fs.String("zk", "127.0.0.1:2181", "")
	dc := fs.Int("datacenter", 0, "")
	if err := fs.Parse([]string{"--zk", "cli:2181"}); err != nil {
		t.Fatal(err)
	}
	if err := SetFromEnv(fs, "zk", "zk-root", "missing"); err != nil {
		t.Fatal(err)
	}
	if *root != "/from-env" || *zk != "cli:2181" || *dc != 0 {
		t.Fatalf("zk-root %q zk %q datacenter %d; want /from-env, cli:2181 (the command line wins), 0 (not named)", *root, *zk, *dc)
	}
	var given []string
	fs.Visit(func(f *flag.Flag) { given = append(given, f.Name) })
	if strings.Join(given, ",") != "zk" {
		t.Fatalf("fs says the command line gave %v; want [zk]", given)
	}
}

// A bad value is one line naming the flag, the variable and the value, as
// snowflaked says it.
func TestSetFromEnvError(t *testing.T) {
	t.Setenv("SNOWFLAKE_TIMEOUT", "soon")
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Duration("timeout", time.Second, "")
	err := SetFromEnv(fs, "timeout")
	want := `invalid value "soon" for flag --timeout (from environment variable SNOWFLAKE_TIMEOUT): `
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v; want it to start %q", err, want)
	}
}
