// Package cliflag holds what snowflaked and snowflakectl share about
// flags: a comma-separated host:port list, as --zk and --addr take it, and
// the environment (SNOWFLAKE_<FLAG>) read by one rule.
package cliflag

import "strings"

// SplitAddrs splits a comma-separated host:port list, as --zk takes it,
// dropping blanks.
func SplitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// Addrs is a comma-separated host:port list bound to a []string field (a
// flag.Getter). It keeps the text as given, for errors: --zk "," lists no
// address, and the error shows the ",".
type Addrs struct {
	text  string
	addrs *[]string
}

// NewAddrs binds the flag to addrs; its default is what addrs holds.
func NewAddrs(addrs *[]string) *Addrs {
	return &Addrs{text: strings.Join(*addrs, ","), addrs: addrs}
}

func (f *Addrs) String() string { return f.text }

// Get is the text as given.
func (f *Addrs) Get() any { return f.text }

// Set splits s into the bound field.
func (f *Addrs) Set(s string) error {
	f.text, *f.addrs = s, SplitAddrs(s)
	return nil
}
