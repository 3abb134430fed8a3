package once

import (
	"context"
	"time"

	"github.com/stagedoor/once/backends"
)

// Backoff between claims while waiting for a concurrent duplicate. With a
// store that implements backends.Watcher the waiter also wakes as soon as
// the record changes; the backoff then only bounds a missed notification.
const (
	waitBackoffMin = 10 * time.Millisecond
	waitBackoffMax = 500 * time.Millisecond
)

type waiter struct {
	store   backends.Store
	watcher backends.Watcher
	backoff time.Duration
}

func newWaiter(store backends.Store) *waiter {
	w := &waiter{store: store, backoff: waitBackoffMin}
	w.watcher, _ = store.(backends.Watcher)
	return w
}

// wait sleeps until the record may have changed, the backoff passes, or the
// owner's lease ends or until passes, whichever is first. It returns the
// context's error if the context ends first.
func (w *waiter) wait(ctx context.Context, scope, key string, leaseRemaining time.Duration, until time.Time) error {
	d := min(w.backoff, max(time.Until(until), 0))
	if leaseRemaining > 0 {
		d = min(d, leaseRemaining+time.Millisecond)
	}
	w.backoff = min(w.backoff*2, waitBackoffMax)

	var changed <-chan struct{}
	if w.watcher != nil {
		ch, stop, err := w.watcher.Watch(ctx, scope, key)
		if err == nil {
			defer stop()
			changed = ch
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-changed:
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}
