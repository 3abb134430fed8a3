package once

import (
	"context"
	"time"

	"github.com/stagedoor/once/backends"
)

// Pacing of the claims of a call waiting for a concurrent duplicate.
// Without a watch (a store with no backends.Watcher, itself or under a
// decorator: see backends.As; or a Watch that failed) the waiter polls
// with backoff, from waitBackoffMin doubling to waitBackoffMax. With a watch open it re-claims when the watch fires, and
// otherwise only when the owner's lease, as last seen, ends (a dead owner
// sends no notification) or after waitWatchPoll, which bounds the delay of
// a lost notification (the watcher's connection dropped).
const (
	waitBackoffMin = 10 * time.Millisecond
	waitBackoffMax = 500 * time.Millisecond
	waitWatchPoll  = 2 * time.Second
)

// waiter paces the claims of a call that waits for the owner of a key. It
// keeps one watch open until it fires, so a long wait costs one
// subscription per change of the record, and a constant number of claims
// per change, not one per backoff step.
type waiter struct {
	watcher backends.Watcher
	backoff time.Duration
	changed <-chan struct{}
	stop    func()
	// woke reports that the last wait ended because the watch fired.
	woke bool
}

func newWaiter(store backends.Store) *waiter {
	w := &waiter{backoff: waitBackoffMin}
	w.watcher, _ = backends.As[backends.Watcher](store)
	return w
}

// wait returns when the record may have changed and the caller should
// claim again, or with the context's error if the context ends first.
// blocked is how long the key stays unclaimable, by the last claim; until
// bounds the whole wait.
//
// The first watch it opens makes it return at once: a change made before
// Watch returned is not signalled, so the caller re-checks the record once
// with the watch open, and from then on waits for it. A watch opened after
// one fired (the record was still unclaimable: a spurious wake-up, or
// another waiter won) is re-checked after the backoff instead, so that a
// store that wakes its watchers spuriously costs claims at the backoff's
// pace, never a busy loop.
func (w *waiter) wait(ctx context.Context, scope, key string, blocked time.Duration, until time.Time) error {
	recheck := false
	if w.watcher != nil && w.changed == nil {
		if ch, stop, err := w.watcher.Watch(ctx, scope, key); err == nil {
			w.changed, w.stop = ch, stop
			if !w.woke {
				return nil
			}
			recheck = true
		}
	}
	w.woke = false
	d := max(time.Until(until), 0)
	if w.changed == nil || recheck {
		d = min(d, w.backoff)
		w.backoff = min(w.backoff*2, waitBackoffMax)
	} else {
		d = min(d, waitWatchPoll)
	}
	if blocked > 0 && blocked < d {
		d = blocked + time.Millisecond // below d, so it cannot overflow
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.changed: // nil without a watch: never ready
		w.close()
		w.woke = true
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// close ends the open watch, if any.
func (w *waiter) close() {
	if w == nil {
		return
	}
	if w.stop != nil {
		w.stop()
	}
	w.changed, w.stop = nil, nil
}
