//go:build chaos

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/snowflake"
)

// The chaos build (-tags chaos, image snowfleet/snowflaked:chaos) lets the
// integration suite move a worker's clock without touching the host's:
//
//	SNOWFLAKE_CHAOS_CLOCK_OFFSET  offset at start, a Go duration ("-3s")
//	SNOWFLAKE_CHAOS_CLOCK_FILE    file holding the offset, re-read every
//	                              100 ms (default /chaos-clock); a missing
//	                              file means the start offset
//
// FROM scratch has no shell, so the suite writes the file with `docker cp`,
// which works on a running and on a stopped container alike.
const (
	chaosOffsetEnv  = "SNOWFLAKE_CHAOS_CLOCK_OFFSET"
	chaosFileEnv    = "SNOWFLAKE_CHAOS_CLOCK_FILE"
	chaosFile       = "/chaos-clock"
	chaosReadPeriod = 100 * time.Millisecond
)

func newClock(log hclog.Logger) (snowflake.Clock, error) {
	c := &chaosClock{log: log.Named("chaos-clock"), path: os.Getenv(chaosFileEnv)}
	if c.path == "" {
		c.path = chaosFile
	}
	if s := os.Getenv(chaosOffsetEnv); s != "" {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", chaosOffsetEnv, err)
		}
		c.start = d
	}
	c.offset.Store(int64(c.start))
	c.reread(time.Now().UnixNano())
	c.log.Warn("chaos build: the clock can be moved", "file", c.path, "offset", time.Duration(c.offset.Load()))
	return c, nil
}

// chaosClock is the system clock plus an offset that a file can change.
// The file is read by whichever caller first notices 100 ms have passed, so
// the clock needs no goroutine of its own (and nothing to stop).
type chaosClock struct {
	log    hclog.Logger
	path   string
	start  time.Duration
	offset atomic.Int64 // time.Duration
	nextNs atomic.Int64 // system time of the next read of the file
	mu     sync.Mutex   // one reader of the file at a time
	last   string       // the file's last content, under mu
}

// UnixNano implements snowflake.Clock.
func (c *chaosClock) UnixNano() int64 {
	now := time.Now().UnixNano()
	if now >= c.nextNs.Load() && c.mu.TryLock() {
		c.reread(now)
		c.mu.Unlock()
	}
	return now + c.offset.Load()
}

// Sleep implements snowflake.Clock: an offset does not change how long a
// duration is.
func (c *chaosClock) Sleep(d time.Duration) { snowflake.SystemClock{}.Sleep(d) }

// reread loads the offset from the file; a file that does not parse keeps
// the offset it had (docker cp may be caught half-way).
func (c *chaosClock) reread(now int64) {
	c.nextNs.Store(now + int64(chaosReadPeriod))
	b, err := os.ReadFile(c.path)
	content := strings.TrimSpace(string(b))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		content = ""
	case err != nil:
		c.log.Error("cannot read the clock file", "file", c.path, "error", err)
		return
	}
	if content == c.last {
		return
	}
	c.last = content
	d := c.start
	if content != "" {
		if d, err = time.ParseDuration(content); err != nil {
			c.log.Error("clock file does not hold a duration", "file", c.path, "content", content, "error", err)
			return
		}
	}
	if old := time.Duration(c.offset.Swap(int64(d))); old != d {
		c.log.Warn("clock offset changed", "from", old, "to", d)
	}
}
