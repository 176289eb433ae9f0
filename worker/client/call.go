package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

// call runs one request on a worker for a caller, retrying on another (or
// the same after its backoff) on a refusal or a broken connection, until
// ctx ends; a call that fails counts in snowflake_client_failures_total.
func (c *Client) call(ctx context.Context, req func(*Conn) error) error {
	err := c.try(ctx, req)
	if err != nil {
		c.m.failures.Inc()
	}
	return err
}

// try is call without the failure count, for the background prefetch,
// whose failures no caller sees.
func (c *Client) try(ctx context.Context, req func(*Conn) error) error {
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
		err := c.do(ctx, e, req)
		if errors.Is(err, errDown) || errors.Is(err, errGone) {
			// Nothing was sent: not an attempt, and not the error to report.
			tried[ntried%len(tried)] = e
			ntried++
			continue
		}
		if attempts > 0 {
			c.m.retries.Inc()
		}
		attempts++
		if err == nil {
			return nil
		}
		if !retryable(err) {
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
	conn, started, err := e.acquire(ctx, c.cfg.DialTimeout, c.cfg.IdleTimeout, DialOptions{Password: c.cfg.Password, TLS: c.cfg.TLS})
	if err != nil {
		var re *ReplyError
		if expired(ctx) || errors.Is(err, errGone) || errors.Is(err, errDown) {
			return err // no fault of the worker: no backoff
		}
		if errors.As(err, &re) && !re.Retryable() {
			c.m.errReply.Inc() // WRONGPASS: another worker would say the same
			return err
		}
		c.m.broken.Inc()
		c.backoff(e, started, err)
		return err
	}
	// The request's time starts now, not before the wait for a connection:
	// a caller that queued behind a busy pool still gets all of it.
	now := time.Now()
	conn.used = now
	deadline, callers := now.Add(c.cfg.RequestTimeout), false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, callers = d, true
	}
	_ = conn.SetDeadline(deadline)
	// Every ID the worker returned before this request began is below what
	// it answers now, on this connection or any other (ascend).
	conn.last = max(conn.last, e.high.Load())
	err = req(conn)
	broken := conn.Broken()
	if err == nil {
		e.raiseHigh(conn.last)
	}
	e.release(conn)
	if err == nil {
		c.m.ok.Inc()
		if e.succeeded(started) {
			c.log.Info("worker answering again", "addr", e.addr)
		}
		return nil
	}
	return c.failed(ctx, e, started, err, broken, callers)
}

// failed accounts for a request to e begun at started that failed with
// err; callers says the connection's deadline was the caller's, earlier
// than RequestTimeout. It is apart from do so that the success path
// allocates nothing (errors.As does).
func (c *Client) failed(ctx context.Context, e *endpoint, started int64, err error, broken, callers bool) error {
	var (
		re *ReplyError
		se *SlotError
		oe *OrderError
	)
	switch {
	case errors.As(err, &se):
		c.m.slotMismatches.Inc()
		c.m.broken.Inc()
		c.backoff(e, started, err)
		return err
	case errors.As(err, &oe):
		c.m.orderErrors.Inc()
		c.m.broken.Inc()
		c.backoff(e, started, err)
		return err
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
		c.backoff(e, started, err)
		return err
	case ctx.Err() != nil, callers && errors.Is(err, os.ErrDeadlineExceeded):
		// Our own deadline cut the round trip short: no fault of the worker.
		// The deadline itself, not ctx.Err(), decides: the connection's
		// timer can fire before the context's.
		return err
	default:
		c.m.broken.Inc()
		if c.backoff(e, started, err) && broken {
			// The others idle on the same worker most likely broke too
			// (it died or restarted): redial after the backoff.
			e.drain()
		}
		return err
	}
}

// backoff leaves e out for a while after a request begun at started failed
// with err, and reports whether this failure was news (not one the current
// backoff already covers). The first failure of a streak is logged, the
// rest only at debug level.
func (c *Client) backoff(e *endpoint, started int64, err error) bool {
	d, n := e.failed(started, time.Now().UnixNano(), c.cfg.Backoff, c.cfg.MaxBackoff)
	switch n {
	case 0:
		return false
	case 1:
		c.log.Warn("worker failed, trying others", "addr", e.addr, "backoff", d, "error", err)
	default:
		c.log.Debug("worker failed again", "addr", e.addr, "backoff", d, "failures", n, "error", err)
	}
	c.m.backoffs.Inc()
	return true
}

// expired reports that ctx's deadline has passed, even if its timer has
// not yet fired: a dial or a read bounded by that deadline can time out
// before ctx.Err() says so.
func expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
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
	if c.isClosed() {
		return ErrClosed
	}
	if last == nil {
		return fmt.Errorf("%w: none answered before the deadline: %w", ErrNoWorkers, ctxErr)
	}
	return fmt.Errorf("%w: %d attempts failed, the last with: %w (%w)", ErrNoWorkers, attempts, last, ctxErr)
}

// waitForWorker waits until a worker's backoff ends or the set changes
// from the one the caller saw. Every caller waiting wakes at that same
// instant; each then waits a random part of Backoff more, so that they
// reach the workers spread out rather than all on the first one back.
func (c *Client) waitForWorker(ctx context.Context, set *[]*endpoint, now int64) error {
	changed, closed := c.changedCh()
	if closed {
		return ErrClosed
	}
	if c.eps.Load() != set {
		return nil // changed before we took the channel: its close is past
	}
	eps := *set
	jitter := rand.N(c.cfg.Backoff/2 + 1)
	var timer <-chan time.Time
	if len(eps) > 0 {
		soonest := eps[0].downUntil.Load()
		for _, e := range eps[1:] {
			soonest = min(soonest, e.downUntil.Load())
		}
		t := time.NewTimer(max(time.Duration(soonest-now), 0) + jitter)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-changed:
		if len(eps) == 0 || c.isClosed() {
			return nil // the first list, no worker to pile onto yet; or Close
		}
	case <-timer:
		return nil
	}
	t := time.NewTimer(jitter)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	return nil
}
