//go:build integration

package integration

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/snowfleet/snowfleet/worker/client"
)

// clientMetrics sums the Go clients' own counters (every client the
// collector made, each registered under its "gen" label).
type clientMetrics struct {
	ok, noLease, clockBack, errReply, broken float64 // snowflake_client_requests_total by result
	retries                                  float64 // snowflake_client_retries_total
	failures                                 float64 // snowflake_client_failures_total
}

func (m clientMetrics) sub(o clientMetrics) clientMetrics {
	return clientMetrics{m.ok - o.ok, m.noLease - o.noLease, m.clockBack - o.clockBack, m.errReply - o.errReply,
		m.broken - o.broken, m.retries - o.retries, m.failures - o.failures}
}

func (c *Collector) clientMetrics() clientMetrics {
	var m clientMetrics
	mfs, err := c.reg.Gather()
	if err != nil {
		c.log("gather the client metrics: %v", err)
		return m
	}
	for _, mf := range mfs {
		for _, x := range mf.GetMetric() {
			v := x.GetCounter().GetValue()
			switch mf.GetName() {
			case "snowflake_client_retries_total":
				m.retries += v
			case "snowflake_client_failures_total":
				m.failures += v
			case "snowflake_client_requests_total":
				for _, l := range x.GetLabel() {
					if l.GetName() != "result" {
						continue
					}
					switch l.GetValue() {
					case "ok":
						m.ok += v
					case "nolease":
						m.noLease += v
					case "clockback":
						m.clockBack += v
					case "error":
						m.errReply += v
					case "broken":
						m.broken += v
					}
				}
			}
		}
	}
	return m
}

// clientProblems names what the Go client saw in a scenario that it should
// not have: any reply breaking the protocol (a worker that repeats or
// reorders IDs inside a batch: the client drops it and retries elsewhere,
// so no call fails), and retries, unless the scenario explains them or they
// are a stall (stalled). causes are the failures behind the retries
// (Collector.TakeCauses).
func clientProblems(d clientMetrics, protocol int64, retriesExplained string, causes []string) []string {
	var p []string
	if protocol > 0 {
		p = append(p, fmt.Sprintf("the Go client rejected %d replies as breaking the protocol (retried elsewhere, so no call failed)", protocol))
	}
	if d.errReply > 0 {
		p = append(p, fmt.Sprintf("the Go client got %.0f error replies (-ERR) it does not retry", d.errReply))
	}
	if retriesExplained == "" && d.retries > 0 && !stalled(d, causes) {
		p = append(p, fmt.Sprintf("the Go client retried %.0f requests (nolease %.0f, clockback %.0f, broken %.0f) in a scenario where no worker stops serving (the failures behind them are logged above)",
			d.retries, d.noLease, d.clockBack, d.broken))
	}
	return p
}

// maxStallRetries is how many requests a scenario in which no worker stops
// serving may see time out: a 2-core machine restarting three ZooKeeper
// JVMs beside the fleet can hold a reply past the client's RequestTimeout
// (1 s) once or twice; a worker that hangs, refuses or drops connections
// makes more, or other failures.
const maxStallRetries = 2

// stalled: the retries were a stall of the machine, not a worker failing:
// at most maxStallRetries, none a refusal (-NOLEASE, -CLOCKBACK), and every
// failure behind them a read that timed out.
func stalled(d clientMetrics, causes []string) bool {
	if d.noLease > 0 || d.clockBack > 0 || d.retries > maxStallRetries || len(causes) == 0 {
		return false
	}
	for _, c := range causes {
		if !strings.HasSuffix(c, "i/o timeout") {
			return false
		}
	}
	return true
}

// clientLog is the Go client's logger. It drops every line, but counts the
// failures whose error is a *client.ProtocolError, and hands every worker
// failure the client logs (the first of a streak as a warning, the rest at
// debug level) to note, so a scenario can name what its retries were.
type clientLog struct {
	hclog.Logger
	n    *atomic.Int64
	note func(addr string, err error)
}

func (p clientLog) see(args []any) {
	addr := ""
	for i := 0; i+1 < len(args); i += 2 {
		if k, _ := args[i].(string); k == "addr" {
			addr = fmt.Sprint(args[i+1])
		}
	}
	for _, a := range args {
		err, ok := a.(error)
		if !ok {
			continue
		}
		var pe *client.ProtocolError
		if errors.As(err, &pe) {
			p.n.Add(1)
		}
		p.note(addr, err)
	}
}

func (p clientLog) Log(_ hclog.Level, _ string, args ...any) { p.see(args) }
func (p clientLog) Trace(_ string, args ...any)              { p.see(args) }
func (p clientLog) Debug(_ string, args ...any)              { p.see(args) }
func (p clientLog) Info(_ string, args ...any)               { p.see(args) }
func (p clientLog) Warn(_ string, args ...any)               { p.see(args) }
func (p clientLog) Error(_ string, args ...any)              { p.see(args) }
func (p clientLog) IsDebug() bool                            { return true }
func (p clientLog) IsTrace() bool                            { return true }
func (p clientLog) Named(string) hclog.Logger                { return p }
func (p clientLog) ResetNamed(string) hclog.Logger           { return p }
func (p clientLog) With(...any) hclog.Logger                 { return p }
