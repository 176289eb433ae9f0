package zktest

import (
	"regexp"
	"strconv"
	"testing"
	"time"
)

// consLine is one connection of the cons command's answer: what it
// received and its session.
var consLine = regexp.MustCompile(`recved=(\d+),sent=\d+,sid=0x([0-9a-f]+)`)

// Received is how many requests the server has received on session sid,
// pings included, as its cons command counts them: what one client cost
// ZooKeeper, measured by ZooKeeper, for tests that count requests.
func (s *Server) Received(t testing.TB, sid int64) int {
	t.Helper()
	out, err := FourLetter(s.Addr(), "cons", 2*time.Second)
	if err != nil {
		t.Fatalf("zktest: cons: %v", err)
	}
	for _, m := range consLine.FindAllStringSubmatch(out, -1) {
		if id, _ := strconv.ParseUint(m[2], 16, 64); int64(id) == sid {
			n, _ := strconv.Atoi(m[1])
			return n
		}
	}
	t.Fatalf("zktest: cons lists no session %x:\n%s", sid, out)
	return 0
}
