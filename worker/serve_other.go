//go:build !linux

package worker

import (
	"errors"
	"net"
	"time"
)

// rawWriter is Linux's (serve_linux.go); elsewhere replies go through
// net.Conn.Write, and newRawWriter makes none.
type rawWriter struct{}

func newRawWriter(net.Conn) *rawWriter { return nil }

func (*rawWriter) write([]byte, time.Duration) error { return errors.ErrUnsupported }
func (*rawWriter) readNow([]byte) int                { return 0 }
