package once_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/testservers"
)

// watchCounter counts the Claims that reach a store that is a
// backends.Watcher, and forwards Watch. With drop set it opens the store's
// watch but hands out a channel that never fires: the notification is
// lost, as when the watcher's connection drops.
type watchCounter struct {
	backends.Store
	claims atomic.Int64
	drop   bool
}

func (s *watchCounter) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	s.claims.Add(1)
	return s.Store.Claim(ctx, p)
}

func (s *watchCounter) Watch(ctx context.Context, scope, key string) (<-chan struct{}, func(), error) {
	ch, stop, err := s.Store.(backends.Watcher).Watch(ctx, scope, key)
	if err != nil || !s.drop {
		return ch, stop, err
	}
	return make(chan struct{}), stop, nil
}

// watchingStores are the test stores that implement backends.Watcher,
// each wrapped in a watchCounter.
func watchingStore(t *testing.T, newStore func(testing.TB) backends.Store, drop bool) *watchCounter {
	store := newStore(t)
	if _, ok := store.(backends.Watcher); !ok {
		t.Skip("not a backends.Watcher")
	}
	return &watchCounter{Store: store, drop: drop}
}

// runOwnerAndWaiters runs an owner whose fn returns 7 after ownerRun and
// n duplicates that wait for it, and checks that every one gets 7.
func runOwnerAndWaiters(t *testing.T, scope once.Scope, n int, ownerRun time.Duration) {
	t.Helper()
	ctx := context.Background()
	started, owner := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) {
			close(started)
			time.Sleep(ownerRun)
			return 7, nil
		})
		owner <- err
	}()
	<-started
	values, errs := make([]int, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			values[i], errs[i] = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) {
				return 0, errors.New("a waiter ran fn")
			})
		})
	}
	wg.Wait()
	require.NoError(t, <-owner)
	for i := range n {
		require.NoError(t, errs[i], "waiter %d", i)
		require.Equal(t, 7, values[i], "waiter %d", i)
	}
}

// With a store that is a backends.Watcher, a waiting duplicate claims a
// bounded number of times however long the owner runs: once to find the
// key pending, once more with its watch open (a change before Watch
// returned is not signalled), once when the watch fires; polling with
// backoff would claim about ten times each over the owner's 1.5 s (150
// times the first backoff step).
func TestWaitersWithAWatcherMakeBoundedClaims(t *testing.T) {
	const waiters, perWaiter = 16, 4
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			wc := watchingStore(t, newStore, false)
			scope := once.New(wc, once.WithWait(time.Minute)).Scope("watch-" + testservers.Suffix())
			runOwnerAndWaiters(t, scope, waiters, 1500*time.Millisecond)
			claims := wc.claims.Load() - 1 // the owner's
			t.Logf("%d waiters made %d claims", waiters, claims)
			require.LessOrEqual(t, claims, int64(waiters*perWaiter))
		})
	}
}

// A lost notification (the watch never fires) is covered by the fallback
// poll: the waiters get the owner's outcome within seconds, not at the end
// of the owner's 30 s lease (the next time the key could change without a
// notification), which a waiter relying on the notification alone would
// wait for. The bound is a correctness bound, two thirds of that lease,
// far above the 2 s poll.
func TestWaitersGetTheOutcomeWhenTheNotificationIsLost(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			wc := watchingStore(t, newStore, true)
			scope := once.New(wc, once.WithWait(time.Minute)).Scope("lost-" + testservers.Suffix())
			start := time.Now()
			runOwnerAndWaiters(t, scope, 4, 300*time.Millisecond)
			require.Less(t, time.Since(start), defaultLease*2/3, "the waiters waited for the lease's end")
		})
	}
}
