//go:build !linux

package worker

import (
	"errors"
	"net"
)

// rawWriter is Linux's (serve_linux.go); elsewhere replies go through
// net.Conn.Write, and newRawWriter makes none.
type rawWriter struct{}

func newRawWriter(net.Conn, func(uintptr) bool) *rawWriter { return nil }

func (*rawWriter) unsent() int        { return 0 }
func (*rawWriter) readNow([]byte) int { return 0 }

// writeRaw is never called: raw is nil.
func (*goConn) writeRaw() error { return errors.ErrUnsupported }

func (*goConn) writeFd(uintptr) bool { return true }
