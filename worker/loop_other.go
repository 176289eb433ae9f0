//go:build !linux

package worker

import "net"

// loop is the Linux epoll loop; elsewhere every connection has a goroutine.
type loop struct{ siblings []*loop }

func newLoop(*Server) (*loop, error) { return nil, nil }

func (l *loop) adopt(*conn, net.Conn) bool { return false }
func (l *loop) run()                       {}
func (l *loop) wake()                      {}
func (l *loop) kill()                      {}
func (l *loop) revoke()                    {}
