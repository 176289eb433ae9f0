//go:build !linux

package snowflake

import "time"

// sleepShort is time.Sleep where the raw Linux sleep is not available.
func sleepShort(d time.Duration) { time.Sleep(d) }
