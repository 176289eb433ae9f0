package worker

import (
	"context"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestWakeAfterLoopExit: a loop with no connection exits as soon as a
// drain starts and closes its wake pipe; when the drain then times out,
// closing everything must not write the wake byte to that fd number, which
// by then may be another socket (here one the test opened; in snowflaked
// an HTTP or ZooKeeper connection). Issue 19 item 3.
func TestWakeAfterLoopExit(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // two loops
	w := startFake(t, func(c *Config) { c.DrainTimeout = time.Second })
	w.srv.mu.Lock()
	loops := w.srv.loops
	w.srv.mu.Unlock()
	if len(loops) != 2 {
		t.Fatalf("%d loops, want 2", len(loops))
	}
	// Connection 1 goes to loops[1] and holds the drain (it reads none of
	// its replies); loops[0] has none.
	r := w.dial(t)
	r.send(strings.Repeat("NEXTIDS 4096\r\n", 200))
	time.Sleep(100 * time.Millisecond)
	idle := loops[0]
	wakeW := idle.wakeW
	done := make(chan error, 1)
	go func() { done <- w.srv.Shutdown(context.Background()) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		idle.mu.Lock()
		exited := idle.exited
		idle.mu.Unlock()
		if exited {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle loop did not exit when the drain started")
		}
		time.Sleep(time.Millisecond)
	}
	// Take the freed fd numbers with socket pairs until one lands on the
	// old wake pipe's write end.
	var peer = -1
	var fds []int
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	for i := 0; i < 64 && peer < 0; i++ {
		p, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fds = append(fds, p[0], p[1])
		switch wakeW {
		case p[0]:
			peer = p[1]
		case p[1]:
			peer = p[0]
		}
	}
	if peer < 0 {
		t.Fatalf("fd %d (the idle loop's wake pipe) was not reused", wakeW)
	}
	if err := <-done; err == nil {
		t.Fatal("Shutdown did not time out; the test needs a drain that outlasts the idle loop")
	}
	var b [8]byte
	if n, _ := syscall.Read(peer, b[:]); n > 0 {
		t.Fatalf("closing the connections wrote %q to fd %d, the exited loop's old wake pipe, now another socket", b[:n], wakeW)
	}
}
