package zkconn

import "sync"

// Parallel bounds the concurrent calls of a ForEach.
const Parallel = 32

// ForEach runs fn on every item, Parallel at a time, and returns the first
// error; go-zookeeper pipelines concurrent calls on one session.
func ForEach(items []string, fn func(string) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, Parallel)
	for _, it := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(it); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}
