package zkconn

import (
	"context"

	"fmt"
)

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

// CallResult runs f, a go-zookeeper call or a sequence of them (which have
// no timeout of their own) writing its result to res, and returns that
// result, or returns early when ctx ends: then with the zero R and an error
// naming op, since f, abandoned, may still be writing to its res.
func CallResult[R any](ctx context.Context, op string, f func(res *R) error) (R, error) {
	var res R
	answered, err := Call(ctx, func() error { return f(&res) })
	if !answered {
		var zero R
		return zero, fmt.Errorf("%s: %w", op, err)
	}
	return res, err
}
