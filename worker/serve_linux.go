package worker

import (
	"net"
	"os"
	"syscall"
	"time"
)

// rawWriter writes a goroutine's replies with raw write(2) calls on its TCP
// socket: the socket is non-blocking, so each returns within microseconds,
// and the runtime need not hand this goroutine's P to another thread
// meanwhile (it does that to a syscall longer than ~20µs, which a loopback
// write often is, and on a single core that hand-off costs more than the
// write). A full socket buffer (EAGAIN) waits in the netpoller, under the
// write deadline.
type rawWriter struct {
	rc syscall.RawConn
	// fn is the write method value, made once so that writing allocates
	// nothing; p is what it writes, wrote and werr its results.
	fn    func(uintptr) bool
	p     []byte
	wrote int
	werr  syscall.Errno
	// block: the socket was full and the deadline is armed; wait.
	block bool
	nc    net.Conn // for the deadline
}

// newRawWriter is nil where nc is not a TCP connection.
func newRawWriter(nc net.Conn) *rawWriter {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &rawWriter{rc: rc, nc: nc}
	w.fn = w.writeFd
	return w
}

// write writes p whole. Only when the socket is full does it set the
// write deadline, timeout from now, and wait: a write that does not block
// costs no timer, and the deadline counts from the moment the socket
// filled, as under the epoll loop. The deadline is cleared once the write
// is done, so that it never cuts short a later one.
func (w *rawWriter) write(p []byte, timeout time.Duration) error {
	w.p, w.wrote, w.werr, w.block = p, 0, 0, false
	err := w.rc.Write(w.fn)
	if err == nil && w.werr == syscall.EAGAIN {
		if err = w.nc.SetWriteDeadline(time.Now().Add(timeout)); err == nil {
			w.werr, w.block = 0, true
			err = w.rc.Write(w.fn)
		}
		if err == nil {
			err = w.nc.SetWriteDeadline(time.Time{})
		}
	}
	w.p = nil
	if err != nil {
		return err
	}
	if w.werr != 0 {
		return os.NewSyscallError("write", w.werr)
	}
	return nil
}

// writeFd is write's syscall.RawConn callback: false means "wait until the
// socket is writable, then call again" (only once write armed the deadline).
func (w *rawWriter) writeFd(fd uintptr) bool {
	w.werr = writeFrom(fd, w.p, &w.wrote)
	return w.werr != syscall.EAGAIN || !w.block
}

// readNow is one read of what the socket holds, without waiting (0: none).
func (w *rawWriter) readNow(p []byte) int {
	n := 0
	_ = w.rc.Control(func(fd uintptr) { n, _ = readInto(int(fd), p) })
	return n
}
