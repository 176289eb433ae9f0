//go:build !linux

package worker

import (
	"errors"
	"net"
)

// rawWriter is Linux's (serve_linux.go); elsewhere replies go through
// net.Conn.Write, and newRawWriter makes none.
type rawWriter struct{}

func newRawWriter(net.Conn) *rawWriter { return nil }

func (*rawWriter) write([]byte) error { return errors.ErrUnsupported }
