package client

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func asReply(err error, re **ReplyError) bool { return errors.As(err, re) }
func isNoWorkers(err error) bool              { return errors.Is(err, ErrNoWorkers) }
func isDeadline(err error) bool               { return errors.Is(err, context.DeadlineExceeded) }
func isBadCount(err error) bool               { return errors.Is(err, ErrBadCount) }
func isClosed(err error) bool                 { return errors.Is(err, ErrClosed) }

// value reads a counter or gauge.
func value(m prometheus.Metric) float64 {
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		panic(err)
	}
	if d.Counter != nil {
		return d.Counter.GetValue()
	}
	return d.Gauge.GetValue()
}
