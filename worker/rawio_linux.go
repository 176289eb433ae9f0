package worker

import (
	"syscall"
	"unsafe"
)

// sysEpollPwait2 is epoll_pwait2's number (Linux 5.11), the same on every
// architecture; package syscall predates it.
const sysEpollPwait2 = 441

// writeFrom writes p[*off:] to the non-blocking socket fd with raw write(2)
// calls, advancing *off. It returns 0 once all is written, EAGAIN when the
// socket is full, or the error that broke it.
func writeFrom(fd uintptr, p []byte, off *int) syscall.Errno {
	for *off < len(p) {
		rest := p[*off:]
		n, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch errno {
		case 0:
			*off += int(n)
		case syscall.EINTR:
		default:
			return errno
		}
	}
	return 0
}

// sysSIOCOUTQNSD is the ioctl that answers how many bytes a TCP socket's
// send queue holds that were not sent yet (Linux 2.6.38); package syscall
// lacks it.
const sysSIOCOUTQNSD = 0x894B

// unsentBytes is how many bytes the socket fd holds not sent yet (0 on an
// error).
func unsentBytes(fd uintptr) int {
	var n int32
	if _, _, errno := syscall.RawSyscall(syscall.SYS_IOCTL, fd, sysSIOCOUTQNSD, uintptr(unsafe.Pointer(&n))); errno != 0 {
		return 0
	}
	return int(n)
}

// readInto is one raw read(2) from the non-blocking socket fd into p; n is
// 0 on an error (EAGAIN: nothing to read now) and at EOF.
func readInto(fd int, p []byte) (int, syscall.Errno) {
	for {
		n, _, errno := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if errno != syscall.EINTR {
			if errno != 0 {
				n = 0
			}
			return int(n), errno
		}
	}
}
