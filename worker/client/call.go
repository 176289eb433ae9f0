package client

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// call runs one request on a worker, retrying on another (or the same
// after its backoff) on a refusal or a broken connection, until ctx ends.
func (c *Client) call(ctx context.Context, req func(*Conn) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.CallTimeout)
		defer cancel()
	}
	var (
		tried    [4]*endpoint // the last few tried, avoided while others are healthy
		ntried   int
		attempts int
		last     error
	)
	for {
		if err := ctx.Err(); err != nil {
			return c.fail(attempts, last, err)
		}
		set := c.eps.Load()
		eps := *set
		now := time.Now().UnixNano()
		e := pick(eps, now, tried[:min(ntried, len(tried))])
		if e == nil {
			if err := c.waitForWorker(ctx, set, now); err != nil {
				return c.fail(attempts, last, err)
			}
			ntried = 0 // the backoffs have passed: everyone may be tried again
			continue
		}
		if attempts > 0 {
			c.m.retries.Inc()
		}
		attempts++
		err := c.do(ctx, e, req)
		if err == nil {
			return nil
		}
		if !retryable(err) {
			c.m.failures.Inc()
			return err
		}
		last = err
		tried[ntried%len(tried)] = e
		ntried++
	}
}

// do sends one request to e and accounts for its outcome.
func (c *Client) do(ctx context.Context, e *endpoint, req func(*Conn) error) error {
	e.inflight.Add(1)
	defer e.inflight.Add(-1)
	now := time.Now()
	conn, err := e.acquire(ctx, c.cfg.DialTimeout, now.Add(-c.cfg.IdleTimeout))
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, ErrClosed) {
			return err // no fault of the worker: no backoff
		}
		c.m.broken.Inc()
		c.backoff(e, err)
		return err
	}
	conn.used = now
	deadline := now.Add(c.cfg.RequestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	err = req(conn)
	broken := conn.Broken()
	e.release(conn)
	if err == nil {
		c.m.ok.Inc()
		if e.succeeded() {
			c.log.Info("worker answering again", "addr", e.addr)
		}
		return nil
	}
	return c.failed(ctx, e, err, broken)
}

// failed accounts for a request to e that failed with err; it is apart
// from do so that the success path allocates nothing (errors.As does).
func (c *Client) failed(ctx context.Context, e *endpoint, err error, broken bool) error {
	var re *ReplyError
	switch {
	case errors.As(err, &re):
		switch re.Code {
		case CodeNoLease:
			c.m.noLease.Inc()
		case CodeClockBack:
			c.m.clockBack.Inc()
		default:
			c.m.errReply.Inc()
			return err
		}
		c.backoff(e, err)
		return err
	case ctx.Err() != nil:
		// Our own deadline cut the round trip short: no fault of the worker.
		return err
	default:
		c.m.broken.Inc()
		c.backoff(e, err)
		if broken {
			// The others idle on the same worker most likely broke too
			// (it died or restarted): redial after the backoff.
			e.drain()
		}
		return err
	}
}

// backoff leaves e out for a while after err; the first failure of a
// streak is logged, the rest only at debug level.
func (c *Client) backoff(e *endpoint, err error) {
	d, first := e.failed(time.Now().UnixNano(), c.cfg.Backoff, c.cfg.MaxBackoff)
	if first {
		c.log.Warn("worker failed, trying others", "addr", e.addr, "backoff", d, "error", err)
		return
	}
	c.log.Debug("worker failed again", "addr", e.addr, "backoff", d, "error", err)
}

// retryable reports whether another attempt may succeed where err failed.
func retryable(err error) bool {
	var re *ReplyError
	if errors.As(err, &re) {
		return re.Retryable()
	}
	return true
}

// fail builds the error of a call that ran out of time or workers.
func (c *Client) fail(attempts int, last, ctxErr error) error {
	c.m.failures.Inc()
	if c.isClosed() {
		return ErrClosed
	}
	if last == nil {
		return fmt.Errorf("%w: none answered before the deadline: %w", ErrNoWorkers, ctxErr)
	}
	return fmt.Errorf("%w: %d attempts failed, the last with: %w (%w)", ErrNoWorkers, attempts, last, ctxErr)
}

// waitForWorker waits until a worker's backoff ends or the set changes
// from the one the caller saw.
func (c *Client) waitForWorker(ctx context.Context, set *[]*endpoint, now int64) error {
	changed, closed := c.changedCh()
	if closed {
		return ErrClosed
	}
	if c.eps.Load() != set {
		return nil // changed before we took the channel: its close is past
	}
	eps := *set
	var timer <-chan time.Time
	if len(eps) > 0 {
		soonest := eps[0].downUntil.Load()
		for _, e := range eps[1:] {
			soonest = min(soonest, e.downUntil.Load())
		}
		t := time.NewTimer(max(time.Duration(soonest-now), 0))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
	case <-timer:
	}
	return nil
}
