package backendtest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// watcher returns e's store as a backends.Watcher, or skips.
func (e *env) watcher() backends.Watcher {
	e.t.Helper()
	w, ok := backends.As[backends.Watcher](e.store)
	if !ok {
		e.t.Skip("store does not implement backends.Watcher; the core polls")
	}
	return w
}

// awaitWake fails unless changed is closed within waitAtMost.
func (e *env) awaitWake(changed <-chan struct{}, what string) {
	e.t.Helper()
	select {
	case <-changed:
	case <-time.After(waitAtMost):
		require.FailNow(e.t, what+" did not wake the watcher")
	}
}

func exerciseWatch(t *testing.T, newStore NewStore) {
	for _, c := range []struct {
		name   string
		lease  time.Duration // the claim's; a shortLease lapses before Watch
		change func(e *env, owner string)
	}{
		{"CompleteWakes", longLease, func(e *env, owner string) { require.True(e.t, e.complete("k", owner, []byte("v"), longRetention)) }},
		{"ReleaseWakes", longLease, func(e *env, owner string) { require.True(e.t, e.release("k", owner)) }},
		{"ResolveWakes", shortLease, func(e *env, _ string) { require.True(e.t, e.resolve("k", nil, []byte("v")).Resolved) }},
	} {
		run(t, newStore, c.name, func(e *env) {
			w := e.watcher()
			owner := Token()
			e.mustClaim("k", owner, nil, c.lease, longRetention)
			if c.lease == shortLease {
				e.elapse(shortLease) // Resolve leaves a live claim to its owner
			}
			changed, stop, err := w.Watch(e.ctx, e.scope, "k")
			require.NoError(e.t, err)
			defer stop()
			c.change(e, owner)
			e.awaitWake(changed, c.name)
		})
	}

	run(t, newStore, "ManyWaitersOneKey", func(e *env) {
		w := e.watcher()
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		const n = 50
		chans := make([]<-chan struct{}, n)
		for i := range chans {
			changed, stop, err := w.Watch(e.ctx, e.scope, "k")
			require.NoError(e.t, err)
			defer stop()
			chans[i] = changed
		}
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		for _, ch := range chans {
			e.awaitWake(ch, "a completion")
		}
	})

	run(t, newStore, "ManyKeysConcurrently", func(e *env) {
		// Waiters of different keys, watched and woken concurrently: each
		// wakes for its own key's change.
		w := e.watcher()
		const n = 40
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			key := "k" + string(rune('A'+i))
			owner := Token()
			e.mustClaim(key, owner, nil, longLease, longRetention)
			wg.Go(func() {
				changed, stop, err := w.Watch(e.ctx, e.scope, key)
				if err != nil {
					errs <- err
					return
				}
				defer stop()
				if _, err := e.store.Complete(e.ctx, backends.CompleteParams{Scope: e.scope, Key: key, Owner: owner, Outcome: []byte("v"), Retention: longRetention}); err != nil {
					errs <- err
					return
				}
				select {
				case <-changed:
				case <-time.After(waitAtMost):
					errs <- errNotWoken(key)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(e.t, err)
		}
	})

	run(t, newStore, "WatchAgainAfterStop", func(e *env) {
		// Watch and stop in quick succession (a shared subscription is
		// dropped and made again before the server confirmed either), then
		// watch for real: the change must still wake it.
		w := e.watcher()
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		for range 20 {
			_, stop, err := w.Watch(e.ctx, e.scope, "k")
			require.NoError(e.t, err)
			stop()
		}
		changed, stop, err := w.Watch(e.ctx, e.scope, "k")
		require.NoError(e.t, err)
		defer stop()
		_, stopOther, err := w.Watch(e.ctx, e.scope, "k")
		require.NoError(e.t, err)
		stopOther() // another waiter leaving does not unsubscribe the first
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		e.awaitWake(changed, "a completion after watch/stop churn")
	})

	run(t, newStore, "StopIsIdempotent", func(e *env) {
		w := e.watcher()
		_, stop, err := w.Watch(e.ctx, e.scope, "k")
		require.NoError(e.t, err)
		stop()
		stop()
	})
}

type errNotWoken string

func (e errNotWoken) Error() string { return "the watcher of " + string(e) + " was not woken" }
