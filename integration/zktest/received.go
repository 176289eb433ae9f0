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

// srvrReceived is the server-wide count in the srvr command's answer.
var srvrReceived = regexp.MustCompile(`(?m)^Received: (\d+)$`)

// Received is how many requests the server has received on session sid,
// pings included, as its cons command counts them: what one client cost
// ZooKeeper, measured by ZooKeeper, for tests that count requests.
func (s *Server) Received(t testing.TB, sid int64) int {
	t.Helper()
	n, ok := s.ReceivedBySession(t)[sid]
	if !ok {
		t.Fatalf("zktest: cons lists no session %x", sid)
	}
	return n
}

// ReceivedBySession is Received for every session connected now, read in
// one cons command.
func (s *Server) ReceivedBySession(t testing.TB) map[int64]int {
	t.Helper()
	out, err := FourLetter(s.Addr(), "cons", 5*time.Second)
	if err != nil {
		t.Fatalf("zktest: cons: %v", err)
	}
	got := map[int64]int{}
	for _, m := range consLine.FindAllStringSubmatch(out, -1) {
		id, _ := strconv.ParseUint(m[2], 16, 64)
		n, _ := strconv.Atoi(m[1])
		got[int64(id)] = n
	}
	return got
}

// ReceivedTotal is how many requests the server has received since it
// started, from every client, as srvr counts them (connections gone
// included, which cons no longer lists).
func (s *Server) ReceivedTotal(t testing.TB) int {
	t.Helper()
	out, err := FourLetter(s.Addr(), "srvr", 5*time.Second)
	if err != nil {
		t.Fatalf("zktest: srvr: %v", err)
	}
	m := srvrReceived.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("zktest: srvr has no Received line:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}
