package hostd

import (
	"context"
	"sync"
)

// fanOut calls fn on each item, on at most workers goroutines at once, and
// returns when every call has returned. Once ctx is done, no further item
// is started.
func fanOut[T any](ctx context.Context, workers int, items []T, fn func(T)) {
	var wg sync.WaitGroup
	feed := make(chan T)
	for w := 0; w < min(workers, len(items)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range feed {
				fn(it)
			}
		}()
	}
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		feed <- it
	}
	close(feed)
	wg.Wait()
}
