package worker

import (
	"net"
	"os"
	"syscall"
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
	w := &rawWriter{rc: rc}
	w.fn = w.writeFd
	return w
}

// write writes p whole.
func (w *rawWriter) write(p []byte) error {
	w.p, w.wrote, w.werr = p, 0, 0
	err := w.rc.Write(w.fn)
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
// socket is writable, then call again".
func (w *rawWriter) writeFd(fd uintptr) bool {
	w.werr = writeFrom(fd, w.p, &w.wrote)
	return w.werr != syscall.EAGAIN
}
