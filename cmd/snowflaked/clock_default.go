//go:build !chaos

package main

import (
	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/snowflake"
)

// newClock returns the worker's time source. The normal build has no way to
// move the clock; the chaos build (clock_chaos.go, -tags chaos) does, for the
// integration suite only.
func newClock(hclog.Logger) (snowflake.Clock, error) { return snowflake.SystemClock{}, nil }
