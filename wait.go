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

// waiter paces the claims of a call that waits for the owner of a key. It
// keeps one watch open until it fires, so a long wait costs one
// subscription per change of the record, not one per backoff step.
type waiter struct {
	watcher backends.Watcher
	backoff time.Duration
	changed <-chan struct{}
	stop    func()
}

func newWaiter(store backends.Store) *waiter {
	w := &waiter{backoff: waitBackoffMin}
	w.watcher, _ = store.(backends.Watcher)
	return w
}

// wait sleeps until the record may have changed, the backoff passes, or the
// owner's lease ends or until passes, whichever is first. It returns the
// context's error if the context ends first.
func (w *waiter) wait(ctx context.Context, scope, key string, leaseRemaining time.Duration, until time.Time) error {
	d := min(w.backoff, max(time.Until(until), 0))
	if leaseRemaining > 0 && leaseRemaining < d {
		d = leaseRemaining + time.Millisecond // below d, so it cannot overflow
	}
	w.backoff = min(w.backoff*2, waitBackoffMax)

	if w.watcher != nil && w.changed == nil {
		if ch, stop, err := w.watcher.Watch(ctx, scope, key); err == nil {
			w.changed, w.stop = ch, stop
		}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.changed:
		w.close()
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// close ends the open watch, if any.
func (w *waiter) close() {
	if w != nil && w.stop != nil {
		w.stop()
	}
	if w != nil {
		w.changed, w.stop = nil, nil
	}
}
