package client

import (
	"math/rand/v2"
	"slices"
)

// pick chooses a healthy worker by the power of two choices: the less busy
// of two drawn at random from the healthy ones. Workers in avoid (tried in
// this call) are taken only when no other is healthy. Drawing among the
// healthy, rather than scanning on from a random index to the next healthy
// one, keeps the worker just after a run of workers in backoff from getting
// the picks that fell on the run.
func pick(eps []*endpoint, now int64, avoid []*endpoint) *endpoint {
	for _, strict := range [2]bool{true, false} {
		if !strict && len(avoid) == 0 {
			break // the same pass again
		}
		usable := func(e *endpoint) bool {
			return e.healthy(now) && (!strict || !slices.Contains(avoid, e))
		}
		n := 0
		for _, e := range eps {
			if usable(e) {
				n++
			}
		}
		if n == 0 {
			continue
		}
		a, b := nth(eps, usable, rand.IntN(n)), nth(eps, usable, rand.IntN(n))
		if b.inflight.Load() < a.inflight.Load() {
			return b
		}
		return a
	}
	return nil
}

// nth is the i-th (from 0) endpoint of eps that is usable.
func nth(eps []*endpoint, usable func(*endpoint) bool, i int) *endpoint {
	for _, e := range eps {
		if usable(e) {
			if i == 0 {
				return e
			}
			i--
		}
	}
	return nil
}
