package sqlstore

import (
	"context"
	"time"
)

// DefaultSweepInterval is RunSweeper's interval when it is given none.
const DefaultSweepInterval = time.Minute

// RunSweeper calls sweep every interval (DefaultSweepInterval when
// interval <= 0) until ctx ends, then returns ctx's error. An error of a
// sweep that ctx did not end goes to onError, and the next tick tries
// again. It starts no goroutine.
func RunSweeper(ctx context.Context, interval time.Duration, sweep func(context.Context) (int64, error), onError func(error)) error {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if _, err := sweep(ctx); err != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
}
