package worker

import (
	"fmt"
	"net"
	"syscall"
)

// recvBuf is the kernel receive buffer asked for each connection's socket
// (the kernel doubles it, for its bookkeeping): requests are a few dozen
// bytes, and a client that pipelines without reading its replies, whose
// requests the worker stops reading (conn.stalled), would otherwise park
// up to 128 KiB of them in the worker's memory, where a pod's memory
// limit counts it (cgroup v2 charges socket buffers to the cgroup).
const recvBuf = 4 << 10

// tcpNotsentLowat is TCP_NOTSENT_LOWAT, which package syscall lacks.
const tcpNotsentLowat = 25

// tuneListener sets, on the listening socket of ln, the kernel buffers of
// the connections it will accept (they inherit them): recvBuf, and
// TCP_NOTSENT_LOWAT at the output limit, so that the kernel too holds at
// most about that much of the replies it could not send yet, instead of
// up to its send buffer (4 MiB): writes take no more and EPOLLOUT waits
// until it has gone. A client that reads is not slowed: what is sent and
// not yet acknowledged does not count. Not a TCP listener: nothing.
func tuneListener(ln net.Listener, outputLimit int) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return nil
	}
	rc, err := tl.SyscallConn()
	if err != nil {
		return fmt.Errorf("tune listener: %w", err)
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, recvBuf)
		if serr == nil && outputLimit > 0 {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpNotsentLowat, outputLimit)
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("tune listener: %w", err)
	}
	return nil
}
