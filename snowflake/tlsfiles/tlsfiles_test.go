package tlsfiles

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/snowfleet/snowfleet/snowflake/configerr"
)

// A stamp changes when a file is rewritten, appears or goes away, and not
// otherwise: what a reload looks for.
func TestStamp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	f := Files{CACertFile: ca}
	missing := f.Stamp()
	if err := os.WriteFile(ca, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	written := f.Stamp()
	if written == missing {
		t.Fatalf("stamp %q did not change when %s appeared", written, ca)
	}
	if again := f.Stamp(); again != written {
		t.Fatalf("stamp changed from %q to %q with no change to the file", written, again)
	}
	if err := os.WriteFile(ca, []byte("a longer one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f.Stamp() == written {
		t.Fatalf("stamp %q did not change when %s was rewritten", written, ca)
	}
	if (Files{}).Stamp() != "" || (Files{}).Enabled() {
		t.Fatal("no files: want an empty stamp and Enabled false")
	}
}

// Load names the field that is wrong.
func TestLoadNamesTheField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f     Files
		field string
	}{
		{Files{KeyFile: notPEM}, "CertFile"},
		{Files{CertFile: notPEM}, "KeyFile"},
		{Files{CertFile: notPEM, KeyFile: filepath.Join(dir, "absent.pem")}, "KeyFile"},
		{Files{CertFile: notPEM, KeyFile: notPEM}, "CertFile"},
		{Files{CACertFile: notPEM}, "CACertFile"},
		{Files{CACertFile: filepath.Join(dir, "absent.pem")}, "CACertFile"},
	} {
		_, _, err := c.f.Load()
		var ce *configerr.Error
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("Load(%+v) = %v; want a config error naming %s", c.f, err, c.field)
		}
	}
	if cert, pool, err := (Files{}).Load(); cert != nil || pool != nil || err != nil {
		t.Errorf("Load of no files = %v, %v, %v; want nothing and no error", cert, pool, err)
	}
}
