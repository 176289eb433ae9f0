package worker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/snowfleet/snowfleet/snowflake"
)

// testIDFormat: NEXTID STRING and NEXTIDS n STRING answer decimal bulk
// strings, for clients whose numbers hold 53 bits; IDFORMAT sets the
// connection's default; the IDs are the same kind of IDs either way.
func testIDFormat(t *testing.T) {
	w := startFake(t, nil)
	r := w.dial(t)

	// The bytes on the wire: a bulk string of the ID's digits.
	r.send("NEXTID STRING\r\n")
	hdr := r.expectPrefix("$")
	digits, _ := r.line()
	if n, _ := strconv.Atoi(hdr[1:]); n != len(digits) {
		t.Fatalf("NEXTID STRING: header %q for %q", hdr, digits)
	}
	first := mustID(t, digits)

	r.send("NEXTIDS 3 string\r\n")
	r.expect("*3")
	prev := first
	for i := 0; i < 3; i++ {
		r.expectPrefix("$")
		line, _ := r.line()
		id := mustID(t, line)
		if id <= prev {
			t.Fatalf("NEXTIDS 3 STRING: %d after %d", id, prev)
		}
		prev = id
	}

	// IDFORMAT: the default for the rest of the connection, and only it.
	r.send("IDFORMAT\r\n")
	r.expect("+INTEGER")
	r.send("IDFORMAT STRING\r\n")
	r.expect("+OK")
	r.send("IDFORMAT\r\n")
	r.expect("+STRING")
	r.send("NEXTID\r\n")
	r.expectPrefix("$")
	line, _ := r.line()
	prev = mustIDAfter(t, line, prev)
	r.send("NEXTID INTEGER\r\n") // a request's own word wins over the default
	prev = mustIDAfter(t, r.expectPrefix(":")[1:], prev)
	other := w.dial(t)
	other.send("NEXTID\r\n")
	other.expectPrefix(":")
	r.send("IDFORMAT integer\r\nNEXTIDS 2\r\n")
	r.expect("+OK")
	r.expect("*2")
	r.expectPrefix(":")
	r.expectPrefix(":")

	// Bad words are named, and the connection serves on.
	r.send("NEXTID BASE64\r\n")
	r.expect("-ERR ID format must be STRING, INTEGER or SHORT, got 'BASE64'")
	r.send("IDFORMAT\r\n")
	r.expect("+INTEGER")

	// go-redis reads the strings as strings, and DECODE takes them.
	c := w.client()
	ctx := context.Background()
	ids, err := c.Do(ctx, "NEXTIDS", "5", "STRING").StringSlice()
	if err != nil || len(ids) != 5 {
		t.Fatalf("NEXTIDS 5 STRING = %v, %v", ids, err)
	}
	for i := 1; i < len(ids); i++ {
		if mustID(t, ids[i]) != mustID(t, ids[i-1])+1 {
			t.Fatalf("NEXTIDS 5 STRING not contiguous: %v", ids)
		}
	}
	dec, err := c.Do(ctx, "DECODE", ids[0]).Slice()
	if err != nil || len(dec) != 10 {
		t.Fatalf("DECODE %s = %v, %v", ids[0], dec, err)
	}
	f, _ := snowflake.Decode(mustID(t, ids[0]))
	if dec[7] != int64(f.Machine) || dec[9] != int64(f.Sequence) {
		t.Fatalf("DECODE %s = %v, want machine %d sequence %d", ids[0], dec, f.Machine, f.Sequence)
	}
	testShortForm(t, w)
}

// testShortForm: NEXTID SHORT, NEXTIDS n SHORT and IDFORMAT SHORT answer
// 13-character short forms as bulk strings, contiguous and ascending in
// byte order; DECODE takes them, and bad ones are named.
func testShortForm(t *testing.T, w *testWorker) {
	r := w.dial(t)
	r.send("NEXTID short\r\n")
	r.expect("$13")
	line, _ := r.line()
	prev := mustShort(t, line)
	prevS := line

	r.send("NEXTIDS 300 SHORT\r\n")
	r.expect("*300")
	for i := 0; i < 300; i++ {
		r.expect("$13")
		line, _ := r.line()
		id := mustShort(t, line)
		if id <= prev || line <= prevS || (i > 0 && id != prev+1) {
			t.Fatalf("NEXTIDS 300 SHORT: %s (%d) after %s (%d)", line, id, prevS, prev)
		}
		prev, prevS = id, line
	}

	r.send("IDFORMAT SHORT\r\nIDFORMAT\r\nNEXTID\r\nNEXTID INTEGER\r\n")
	r.expect("+OK")
	r.expect("+SHORT")
	r.expect("$13")
	line, _ = r.line()
	if id := mustShort(t, line); id <= prev {
		t.Fatalf("NEXTID under IDFORMAT SHORT: %d after %d", id, prev)
	}
	prev = mustIDAfter(t, r.expectPrefix(":")[1:], prev)

	// DECODE takes the short form, upper or lower case, and the decimal
	// one, with the same answer; a bad short form is named.
	c := w.client()
	ctx := context.Background()
	want, err := c.Do(ctx, "DECODE", strconv.FormatInt(prev, 10)).Slice()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{snowflake.FormatShort(prev), strings.ToLower(snowflake.FormatShort(prev))} {
		got, err := c.Do(ctx, "DECODE", s).Slice()
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("DECODE %s = %v, %v; want %v", s, got, err, want)
		}
	}
	r.send("DECODE 8000000000000\r\nDECODE 0000000000U00\r\nPING\r\n")
	r.expect("-ERR a 13-character id is the short form (Crockford base-32, 0000000000000..7ZZZZZZZZZZZZ), got '8000000000000'")
	r.expect("-ERR a 13-character id is the short form (Crockford base-32, 0000000000000..7ZZZZZZZZZZZZ), got '0000000000U00'")
	r.expect("+PONG")

	// go-redis reads them as strings.
	ids, err := c.Do(ctx, "NEXTIDS", "4", "SHORT").StringSlice()
	if err != nil || len(ids) != 4 || !slices.IsSorted(ids) {
		t.Fatalf("NEXTIDS 4 SHORT = %v, %v", ids, err)
	}
}

func mustShort(t *testing.T, s string) int64 {
	t.Helper()
	id, err := snowflake.ParseShort(s)
	if err != nil || id <= 0 || snowflake.FormatShort(id) != s {
		t.Fatalf("%q is not a short-form ID: %v", s, err)
	}
	return id
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		t.Fatalf("%q is not an ID", s)
	}
	if _, err := snowflake.Decode(id); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return id
}

func mustIDAfter(t *testing.T, s string, prev int64) int64 {
	t.Helper()
	id := mustID(t, s)
	if id <= prev {
		t.Fatalf("ID %d after %d", id, prev)
	}
	return id
}

// TestCloseOnNoLease: a worker that cannot serve answers the refusal and
// then closes the connection, so that a generic client's reconnect goes,
// through its balancer, to a worker that can; requests pipelined behind
// the refusal are not answered. CloseOnNoLease false keeps the connection.
func TestCloseOnNoLease(t *testing.T) {
	for _, loop := range []bool{true, false} {
		name := "loop"
		if !loop {
			name = "goroutines"
		}
		t.Run(name, func(t *testing.T) {
			noEventLoop = !loop
			defer func() { noEventLoop = false }()
			w := startWorker(t, "127.0.0.1:1", false, nil) // no ZooKeeper: no lease
			r := w.dial(t)
			r.send("PING\r\nNEXTIDS 2 STRING\r\nPING\r\n")
			r.expect("+PONG")
			r.expectPrefix("-NOLEASE this worker holds no lease")
			r.expectClosed()

			keep := startWorker(t, "127.0.0.1:1", false, func(c *Config) { c.CloseOnNoLease = false })
			r = keep.dial(t)
			r.send("NEXTID\r\nPING\r\n")
			if got := r.expectPrefix("-NOLEASE "); !strings.Contains(got, "try another worker") {
				t.Fatalf("refusal %q does not say what to do", got)
			}
			r.expect("+PONG")
		})
	}
}
