package client

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The scenario benchmarks run one situation each against stand-in workers
// and report what callers and workers went through: calls that failed,
// retries, requests counted broken, backoffs begun, and for the blip how
// long the restarted worker was left out. Run them once each:
//
//	go test -run '^$' -bench Scenario -benchtime 1x ./worker/client/

// scenario is what one run counted.
type scenario struct {
	ok, errs        atomic.Int64 // calls as callers saw them
	firstErr        error
	errOnce         sync.Once
	retries, broken float64
	backoffs        int64         // streaks begun plus backoffs extended
	outage          time.Duration // the blip only: restart end to the next ID served
	counter         *logCounter
}

// runScenario runs callers goroutines calling Next (5s deadline each) on a
// client of the workers for dur, with event run once in the middle.
func runScenario(b *testing.B, workers []*standIn, cfg Config, callers int, dur time.Duration, event func(*scenario)) *scenario {
	b.Helper()
	s := &scenario{counter: &logCounter{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range workers {
		cfg.Static = append(cfg.Static, w.addr)
	}
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: s.counter})
	c, err := New(cfg, log, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				_, err := c.Next(ctx)
				cancel()
				if err != nil {
					s.errs.Add(1)
					s.errOnce.Do(func() { s.firstErr = err })
					continue
				}
				s.ok.Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(dur / 4)
		if event != nil {
			event(s)
		}
	}()
	time.Sleep(dur)
	<-done
	close(stop)
	wg.Wait()
	s.retries, s.broken = value(c.m.retries), value(c.m.broken)
	s.backoffs = s.counter.backoffs()
	return s
}

func (s *scenario) report(b *testing.B) {
	b.ReportMetric(float64(s.ok.Load()), "ok-calls")
	b.ReportMetric(float64(s.errs.Load()), "failed-calls")
	b.ReportMetric(s.retries, "retries")
	b.ReportMetric(s.broken, "broken")
	b.ReportMetric(float64(s.backoffs), "backoffs")
	if s.outage > 0 {
		b.ReportMetric(float64(s.outage.Milliseconds()), "outage-ms")
	}
	if s.firstErr != nil {
		b.Logf("first error a caller saw: %v", s.firstErr)
	}
}

// BenchmarkScenarioSaturation: 50 callers on one healthy worker that takes
// 100ms a request, through a pool of 4: a caller waits about 1.25s for a
// connection, longer than RequestTimeout (1s).
func BenchmarkScenarioSaturation(b *testing.B) {
	for range b.N {
		w := newStandIn(b)
		w.setDelay(100 * time.Millisecond)
		s := runScenario(b, []*standIn{w}, DefaultConfig(), 50, 4*time.Second, nil)
		s.report(b)
	}
}

// BenchmarkScenarioPause: 20 callers on one fast worker that pauses 1.2s
// (a long GC pause), through a pool of 4.
func BenchmarkScenarioPause(b *testing.B) {
	for range b.N {
		w := newStandIn(b)
		w.setDelay(time.Millisecond)
		s := runScenario(b, []*standIn{w}, DefaultConfig(), 20, 4*time.Second, func(*scenario) {
			w.pause()
			time.Sleep(1200 * time.Millisecond)
			w.resume()
		})
		s.report(b)
	}
}

// BenchmarkScenarioBlip: 16 callers on two workers, pool of 4 each; one
// restarts, refusing connections for 200ms. outage-ms is how long after it
// listens again it serves its next ID.
func BenchmarkScenarioBlip(b *testing.B) {
	for range b.N {
		a, other := newStandIn(b), newStandIn(b)
		a.setDelay(2 * time.Millisecond)
		other.setDelay(2 * time.Millisecond)
		s := runScenario(b, []*standIn{a, other}, DefaultConfig(), 16, 8*time.Second, func(s *scenario) {
			a.restart(200 * time.Millisecond)
			back, before := time.Now(), a.served.Load()
			for a.served.Load() == before && time.Since(back) < 6*time.Second {
				time.Sleep(5 * time.Millisecond)
			}
			s.outage = time.Since(back)
		})
		s.report(b)
	}
}
