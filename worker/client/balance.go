package client

import (
	"math/rand/v2"
	"slices"
)

// pick chooses a healthy worker by the power of two choices: the less busy
// of two picked at random. Workers in avoid (tried in this call) are taken
// only when no other is healthy.
func pick(eps []*endpoint, now int64, avoid []*endpoint) *endpoint {
	n := len(eps)
	if n == 0 {
		return nil
	}
	usable := func(e *endpoint, strict bool) bool {
		return e.healthy(now) && (!strict || !slices.Contains(avoid, e))
	}
	first := func(start int, strict bool) *endpoint {
		for i := range n {
			if e := eps[(start+i)%n]; usable(e, strict) {
				return e
			}
		}
		return nil
	}
	i, j := rand.IntN(n), rand.IntN(n)
	for _, strict := range [2]bool{true, false} {
		a := first(i, strict)
		if a == nil {
			continue
		}
		if b := first(j, strict); b != nil && b.inflight.Load() < a.inflight.Load() {
			return b
		}
		return a
	}
	return nil
}
