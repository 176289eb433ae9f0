package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// scriptedPeer accepts connections and answers each request line group
// with the next canned reply; it records what it received. It stands for a
// misbehaving peer, which no real worker can be made to be.
func scriptedPeer(t *testing.T, replies ...string) (addr string, got <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	reqs := make(chan string, len(replies))
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for _, reply := range replies {
			req, err := readRequest(r)
			if err != nil {
				return
			}
			reqs <- req
			if _, err := io.WriteString(c, reply); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String(), reqs
}

// readRequest reads one RESP array of bulk strings, returned raw.
func readRequest(r *bufio.Reader) (string, error) {
	head, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	var n int
	if _, err := fmt.Sscanf(head, "*%d\r\n", &n); err != nil {
		return "", err
	}
	out := head
	for range 2 * n {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		out += line
	}
	return out, nil
}

func TestConnFramesRequests(t *testing.T) {
	addr, got := scriptedPeer(t, ":17\r\n", "*3\r\n:20\r\n:21\r\n:22\r\n", "*1\r\n:30\r\n")
	c := dialT(t, addr)
	id, err := c.Next()
	if err != nil || id != 17 {
		t.Fatalf("Next = %d, %v; want 17", id, err)
	}
	if r := <-got; r != "*1\r\n$6\r\nNEXTID\r\n" {
		t.Errorf("NEXTID sent as %q", r)
	}
	ids := make([]int64, 3)
	if err := c.NextN(ids); err != nil || ids[0] != 20 || ids[2] != 22 {
		t.Fatalf("NextN = %v, %v", ids, err)
	}
	if r := <-got; r != "*2\r\n$7\r\nNEXTIDS\r\n$1\r\n3\r\n" {
		t.Errorf("NEXTIDS 3 sent as %q", r)
	}
	one := make([]int64, 1)
	if err := c.NextN(one); err != nil || one[0] != 30 {
		t.Fatalf("NextN(1) = %v, %v", one, err)
	}
}

func TestConnErrorReplyKeepsConnection(t *testing.T) {
	addr, _ := scriptedPeer(t, "-ERR count must be an integer in 1..4096, got '0'\r\n", ":5\r\n")
	c := dialT(t, addr)
	_, err := c.Next()
	var re *ReplyError
	if !errors.As(err, &re) || re.Code != "ERR" || re.Retryable() {
		t.Fatalf("Next error = %#v, want an ERR *ReplyError", err)
	}
	if c.Broken() {
		t.Fatal("an error reply broke the connection")
	}
	if id, err := c.Next(); err != nil || id != 5 {
		t.Fatalf("Next after an error reply = %d, %v", id, err)
	}
}

// A refusal is retryable, and retires the connection: the worker closes it
// after the reply (--close-on-nolease), so it must not be pooled again.
func TestConnRefusalRetiresConnection(t *testing.T) {
	for _, reply := range []string{"-NOLEASE no lease held: standby\r\n", "-CLOCKBACK clock is 40ms behind\r\n"} {
		addr, _ := scriptedPeer(t, reply)
		c := dialT(t, addr)
		ids := make([]int64, 2)
		err := c.NextN(ids)
		var re *ReplyError
		if !errors.As(err, &re) || (re.Code != CodeNoLease && re.Code != CodeClockBack) || re.Addr != addr || !re.Retryable() {
			t.Fatalf("NextN error = %#v, want a retryable refusal", err)
		}
		if strings.Contains(reply, "standby") && re.Message != "no lease held: standby" {
			t.Fatalf("message = %q", re.Message)
		}
		if !c.Broken() {
			t.Fatalf("%q left the connection poolable", reply)
		}
	}
}

func TestConnRejectsBrokenPromises(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		n           int // 0: NEXTID
	}{
		{"zero id", ":0\r\n", 0},
		{"negative id", ":-5\r\n", 0},
		{"simple string", "+OK\r\n", 0},
		{"bulk", "$2\r\n17\r\n", 0},
		{"no CRLF", ":5\n", 0},
		{"short array", "*2\r\n:1\r\n:2\r\n", 3},
		{"descending", "*3\r\n:5\r\n:4\r\n:6\r\n", 3},
		{"duplicate", "*2\r\n:5\r\n:5\r\n", 2},
		{"string element", "*2\r\n:5\r\n+6\r\n", 2},
		{"not an array", ":5\r\n", 2},
		{"null array", "*-1\r\n", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := scriptedPeer(t, tc.reply)
			c := dialT(t, addr)
			var err error
			if tc.n == 0 {
				_, err = c.Next()
			} else {
				err = c.NextN(make([]int64, tc.n))
			}
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("reply %q: error %v, want a *ProtocolError", tc.reply, err)
			}
			if !c.Broken() {
				t.Fatal("connection not marked broken after a bad reply")
			}
		})
	}
}

func dialT(t *testing.T, addr string) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}
