//go:build mutant

package main

import (
	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/snowflake/mutant"
)

// checkMutant refuses a SNOWFLAKE_MUTANT that names no mutant, and says
// loudly which one runs: the suite's mutation proof reads this line to know
// the worker is the broken one it asked for.
func checkMutant(log hclog.Logger) error {
	name, err := mutant.Active()
	if err != nil {
		return err
	}
	if name != "" {
		log.Warn("MUTANT build: this worker is deliberately broken", "mutant", name)
	}
	return nil
}
