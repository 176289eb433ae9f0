//go:build !(linux && amd64)

package snowflake

import "time"

// wallNanos is the wall clock in Unix nanoseconds. Elsewhere than
// linux/amd64, syscall.Gettimeofday may be a real system call: time.Now is
// the cheaper read there.
func wallNanos() int64 { return time.Now().UnixNano() }
