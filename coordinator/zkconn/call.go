package zkconn

import "context"

// Call runs fn, a go-zookeeper call (which has no timeout of its own), on
// a goroutine of its own and waits for it until ctx ends. answered is true
// with fn's error; false with ctx's when ctx ended first: fn was abandoned
// and may still write its results, which must then not be read.
func Call(ctx context.Context, fn func() error) (answered bool, err error) {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return true, err
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
