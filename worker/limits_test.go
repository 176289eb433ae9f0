package worker

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/snowfleet/snowfleet/coordinator"
	"github.com/snowfleet/snowfleet/integration/zktest"
	"github.com/snowfleet/snowfleet/snowflake"
)

// testReadyPerSlice: a client that pipelines 292 NEXTIDS 4096 and reads
// them slowly gets no ID issued after the worker became not ready (a clock
// 2s off ZooKeeper's, which only Ready knows: the generator would go on),
// and a -NOLEASE instead (issue 19 item 2). Before, Ready was checked once
// per read, and the rest of the batch was served, not ready or not.
func testReadyPerSlice(t *testing.T, zk *zktest.Server) {
	clock := &stepClock{}
	w := startWorkerWith(t, zk.Addr(), true, nil, func(cc *coordinator.Config) {
		cc.SessionTimeout, cc.Renew, cc.Horizon, cc.Clock = 2*time.Second, 200*time.Millisecond, 5*time.Second, clock
	})
	r := w.dial(t)
	r.send(strings.Repeat("NEXTIDS 4096\r\n", 292)) // 26 MB of replies: far more than the sockets hold
	time.Sleep(200 * time.Millisecond)
	clock.step(2 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for w.coord.Ready() {
		if time.Now().After(deadline) {
			t.Fatalf("still ready 5s after the clock moved 2s: %+v", w.coord.Readiness())
		}
		time.Sleep(2 * time.Millisecond)
	}
	notReady := time.Now().Add(2 * time.Second).UnixMilli() // on the worker's clock
	ids, after, refused := 0, 0, ""
	for refused == "" && ids < 292 {
		l, err := r.line()
		if err != nil {
			t.Fatalf("after %d replies: %v", ids, err)
		}
		if strings.HasPrefix(l, "-") {
			refused = l
			break
		}
		first, err := r.line()
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < 4096; i++ {
			if _, err := r.line(); err != nil {
				t.Fatal(err)
			}
		}
		ids++
		if f, _ := snowflake.Decode(mustInt(strings.TrimPrefix(first, ":"))); f.UnixMs > notReady+10 {
			after++
		}
	}
	t.Logf("%d replies of IDs, %d of them issued after the worker was not ready; then %q", ids, after, refused)
	if after > 0 || !strings.HasPrefix(refused, "-NOLEASE") {
		t.Fatalf("%d replies of IDs issued after the worker was not ready, then %q; want none, then -NOLEASE", after, refused)
	}
}

// testHelloSetName: HELLO's SETNAME takes what CLIENT SETNAME takes, no
// more: a newline in a name would forge a line of CLIENT LIST.
func testHelloSetName(t *testing.T) {
	w := startFake(t, nil)
	r := w.dial(t)
	forged := "x\nid=666 addr=1.2.3.4:5"
	r.send("*4\r\n$5\r\nHELLO\r\n$1\r\n2\r\n$7\r\nSETNAME\r\n$" + strconv.Itoa(len(forged)) + "\r\n" + forged + "\r\n")
	r.expect("-ERR Client names cannot contain spaces, newlines or special characters.")
	r.send("CLIENT GETNAME\r\n")
	r.expect("$-1")
	r.send("HELLO 2 SETNAME good-name\r\n")
	r.expect("*14")
	for l, _ := r.line(); l != "*0"; l, _ = r.line() { // modules, the last field
	}
	r.send("CLIENT GETNAME\r\n")
	r.expect("$9")
	r.expect("good-name")
	// CLIENT LIST is one line, a bulk string of the right length, that
	// ends with the name.
	r.send("CLIENT LIST\r\n")
	hdr := r.expectPrefix("$")
	l, _ := r.line() // up to the line's own newline
	if n, _ := strconv.Atoi(hdr[1:]); n != len(l) || !strings.HasPrefix(l, "id=") || !strings.HasSuffix(l, " name=good-name db=0\n") {
		t.Fatalf("CLIENT LIST: %q then %q", hdr, l)
	}
	r.expect("") // the bulk string's CRLF
}

// testDrainKernelBuffered: a drain answers the requests that reached the
// kernel before it, even those the server had not read yet because the
// client was slow to read replies: the PINGs sent behind a stalled
// pipeline are answered, then the connection ends cleanly (no reset).
func testDrainKernelBuffered(t *testing.T) {
	w := startFake(t, nil)
	r := w.dial(t)
	r.send(strings.Repeat("NEXTIDS 4096\r\n", 100)) // 9 MB of replies: the write stalls
	time.Sleep(200 * time.Millisecond)
	r.send(strings.Repeat("PING\r\n", 10)) // waits in the server's socket
	time.Sleep(50 * time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- w.srv.Shutdown(context.Background()) }()
	time.Sleep(50 * time.Millisecond)
	arrays, pongs := 0, 0
	var err error
	for {
		var l string
		if l, err = r.line(); err != nil {
			break
		}
		switch {
		case strings.HasPrefix(l, "*"):
			arrays++
		case l == "+PONG":
			pongs++
		}
	}
	if serr := <-done; serr != nil {
		t.Fatalf("Shutdown: %v", serr)
	}
	if arrays != 100 || pongs != 10 || !errors.Is(err, io.EOF) {
		t.Fatalf("after the drain: %d of 100 NEXTIDS and %d of 10 PINGs answered, then %v; want all, then EOF", arrays, pongs, err)
	}
}

// testReadTimeoutLingers: the reply to a request not completed in time
// reaches a client that is still sending (the server lingers instead of
// closing with input unread, which resets the connection).
func testReadTimeoutLingers(t *testing.T) {
	w := startFake(t, func(c *Config) { c.ReadTimeout = 300 * time.Millisecond })
	r := w.dial(t)
	r.send("*2\r\n$7\r\nNEXTIDS\r\n$60000\r\n")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if _, err := r.nc.Write([]byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")); err != nil {
				return
			}
		}
	}()
	time.Sleep(600 * time.Millisecond) // past the timeout, the client still sending
	l, err := r.line()
	if !strings.HasPrefix(l, "-ERR Protocol error: request not completed within 300ms") {
		t.Fatalf("reply %q, %v; want the read timeout's error", l, err)
	}
}

// testWriteTimeoutFromStall: a write of replies has WriteTimeout from the
// moment the socket filled, under either transport: a client that reads
// again 1.75s after its pipeline filled the socket (WriteTimeout 2s) gets
// every reply, even though its previous write was 2.25s before.
func testWriteTimeoutFromStall(t *testing.T) {
	w := startFake(t, func(c *Config) { c.WriteTimeout = 2 * time.Second })
	r := w.dial(t)
	r.send("PING\r\n")
	r.expect("+PONG")
	time.Sleep(500 * time.Millisecond)
	r.send(strings.Repeat("NEXTIDS 4096\r\n", 60)) // 5 MB: the socket fills at once
	time.Sleep(1750 * time.Millisecond)
	for i := range 60 {
		l, err := r.line()
		if err != nil || !strings.HasPrefix(l, "*4096") {
			t.Fatalf("reply %d: %q, %v", i, l, err)
		}
		for range 4096 {
			if _, err := r.br.ReadSlice('\n'); err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
		}
	}
}

// TestValidName: the word-at-a-time check agrees with Redis's rule,
// printable ASCII without spaces, for every byte value at every position
// of a name of up to 17 bytes (so both the words and the tail are tried).
func TestValidName(t *testing.T) {
	for n := 1; n <= 17; n++ {
		for pos := range n {
			for b := range 256 {
				name := []byte(strings.Repeat("a", n))
				name[pos] = byte(b)
				want := b > ' ' && b <= '~'
				if got := validName(name); got != want {
					t.Fatalf("validName(%q) = %v, want %v", name, got, want)
				}
			}
		}
	}
}
