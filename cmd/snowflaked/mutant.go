//go:build !mutant

package main

import "github.com/hashicorp/go-hclog"

// checkMutant is a no-op without -tags mutant: nothing reads
// SNOWFLAKE_MUTANT (snowflake/mutant).
func checkMutant(hclog.Logger) error { return nil }
