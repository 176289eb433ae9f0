//go:build !linux

package worker

import "net"

// tuneListener sets the kernel buffers of accepted sockets on Linux
// (sockbuf_linux.go); elsewhere the system's defaults stay.
func tuneListener(net.Listener, int) error { return nil }
