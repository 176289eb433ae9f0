package idlease

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// registered is the Registerer a Lease gives its coordinator and its own
// metrics: it keeps what was registered, so that Close unregisters it and a
// program may open a lease again on the same registry (a second Open used
// to fail with "duplicate metrics collector registration attempted", even
// after Close).
type registered struct {
	reg  prometheus.Registerer
	mu   sync.Mutex
	cols []prometheus.Collector
}

func (r *registered) Register(c prometheus.Collector) error {
	if err := r.reg.Register(c); err != nil {
		return err
	}
	r.mu.Lock()
	r.cols = append(r.cols, c)
	r.mu.Unlock()
	return nil
}

func (r *registered) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

func (r *registered) Unregister(c prometheus.Collector) bool {
	r.mu.Lock()
	for i, have := range r.cols {
		if have == c {
			r.cols = append(r.cols[:i], r.cols[i+1:]...)
			break
		}
	}
	r.mu.Unlock()
	return r.reg.Unregister(c)
}

// unregisterAll unregisters everything registered through r.
func (r *registered) unregisterAll() {
	r.mu.Lock()
	cols := r.cols
	r.cols = nil
	r.mu.Unlock()
	for _, c := range cols {
		r.reg.Unregister(c)
	}
}
