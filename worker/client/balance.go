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
//
// Health is read once per worker, into a list the draw is made from: other
// calls put workers into backoff concurrently, and a second reading could
// find fewer healthy than the first counted (a nil pick, a crash: the
// mutation proof's dupbatch fleet did this).
func pick(eps []*endpoint, now int64, avoid []*endpoint) *endpoint {
	var buf [16]*endpoint
	for _, strict := range [2]bool{true, false} {
		if !strict && len(avoid) == 0 {
			break // the same pass again
		}
		usable := buf[:0]
		for _, e := range eps {
			if e.healthy(now) && (!strict || !slices.Contains(avoid, e)) {
				usable = append(usable, e)
			}
		}
		if len(usable) == 0 {
			continue
		}
		a, b := usable[rand.IntN(len(usable))], usable[rand.IntN(len(usable))]
		if b.inflight.Load() < a.inflight.Load() {
			return b
		}
		return a
	}
	return nil
}
