package once_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

// cachedKeeper returns a Keeper with a local cache over a memory store on
// clock, and the counting wrapper around that store.
func cachedKeeper(clock *fakeClock, lc once.LocalCache, opts ...once.Option) (*once.Keeper, *countingStore, *memory.Store) {
	mem := memory.New(&memory.Config{Now: clock.Now})
	cs := &countingStore{Store: mem}
	lc = once.LocalCacheWithClock(lc, clock.Now)
	return once.New(cs, append([]once.Option{once.WithLocalCache(lc)}, opts...)...), cs, mem
}

func countRuns(runs *atomic.Int64, v int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		runs.Add(1)
		return v, nil
	}
}

func TestLocalCacheHotReplayMakesNoStoreCall(t *testing.T) {
	ctx := context.Background()
	k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8})
	scope := k.Scope("s")
	var runs atomic.Int64
	v, err := once.Do(ctx, scope, "hot", cacheFP("a"), countRuns(&runs, 7))
	require.NoError(t, err)
	require.Equal(t, 7, v)
	require.EqualValues(t, 1, cs.claims.Load())
	for range 100 {
		out, err := once.DoOutcome(ctx, scope, "hot", cacheFP("a"), countRuns(&runs, 8))
		require.NoError(t, err)
		require.Equal(t, once.Outcome[int]{Value: 7, Status: once.Replayed}, out)
	}
	require.EqualValues(t, 1, cs.claims.Load(), "replays answered from the cache")
	require.EqualValues(t, 1, runs.Load())
}

func TestLocalCacheCachesFinalErrorsAndStoreReads(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	k, cs, mem := cachedKeeper(clock, once.LocalCache{MaxEntries: 8})
	// A record completed by another Keeper on the same store is read once.
	other := once.New(mem).Scope("s")
	_, err := once.Do(ctx, other, "declined", nil, func(context.Context) (int, error) {
		return 0, once.Final(errors.New("card declined"))
	})
	require.ErrorContains(t, err, "card declined")
	scope := k.Scope("s")
	for range 10 {
		_, err := once.Do(ctx, scope, "declined", cacheFP("x"), func(context.Context) (int, error) { return 1, nil })
		require.ErrorContains(t, err, "card declined")
	}
	require.EqualValues(t, 1, cs.claims.Load())
}

func TestLocalCacheFingerprintMismatchIsNeverServed(t *testing.T) {
	ctx := context.Background()
	k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8})
	scope := k.Scope("s")
	var runs atomic.Int64
	_, err := once.Do(ctx, scope, "k", cacheFP("a"), countRuns(&runs, 1))
	require.NoError(t, err)
	for range 3 {
		v, err := once.Do(ctx, scope, "k", cacheFP("b"), countRuns(&runs, 2))
		require.ErrorIs(t, err, once.ErrKeyReused)
		require.Zero(t, v, "a mismatching call never sees the cached value")
	}
	// Same symmetric rule as the store: no fingerprint means no check.
	v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 3))
	require.NoError(t, err)
	require.Equal(t, 1, v)
	// A record stored without a fingerprint replays to any fingerprint.
	_, err = once.Do(ctx, scope, "open", nil, countRuns(&runs, 4))
	require.NoError(t, err)
	v, err = once.Do(ctx, scope, "open", cacheFP("z"), countRuns(&runs, 5))
	require.NoError(t, err)
	require.Equal(t, 4, v)
	require.EqualValues(t, 2, runs.Load())
	require.EqualValues(t, 2, cs.claims.Load(), "mismatches were answered from the cache too")
}

func TestLocalCacheTTLNeverOutlivesRetention(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	k, cs, _ := cachedKeeper(clock, once.LocalCache{MaxEntries: 8, TTL: time.Hour}, once.WithRetention(time.Minute))
	scope := k.Scope("s")
	var runs atomic.Int64
	_, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	clock.Advance(time.Minute - time.Nanosecond)
	v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.EqualValues(t, 1, cs.claims.Load(), "still cached within retention")
	clock.Advance(time.Nanosecond)
	v, err = once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 2, v, "the record expired with its retention, and so did the entry")
	require.EqualValues(t, 2, runs.Load())
}

func TestLocalCacheTTLShorterThanRetention(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	k, cs, _ := cachedKeeper(clock, once.LocalCache{MaxEntries: 8, TTL: 10 * time.Second})
	scope := k.Scope("s")
	var runs atomic.Int64
	_, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	clock.Advance(10 * time.Second)
	v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 1, v, "replayed from the store")
	require.EqualValues(t, 2, cs.claims.Load(), "the entry expired after TTL")
	require.EqualValues(t, 1, runs.Load())
}

func TestLocalCacheServesADeletedRecordForAtMostTTL(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	k, _, mem := cachedKeeper(clock, once.LocalCache{MaxEntries: 8, TTL: 5 * time.Second})
	scope := k.Scope("s")
	var runs atomic.Int64
	_, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	deleted, err := mem.Delete(ctx, "s", "k")
	require.NoError(t, err)
	require.True(t, deleted)
	clock.Advance(5*time.Second - time.Nanosecond)
	v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 1, v, "documented staleness: the deleted record within TTL")
	clock.Advance(time.Nanosecond)
	v, err = once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 2, v, "after TTL the deletion is seen")
}

func TestLocalCacheEvictsByEntriesWithSecondChance(t *testing.T) {
	ctx := context.Background()
	k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 3})
	scope := k.Scope("s")
	var runs atomic.Int64
	for _, key := range []string{"a", "b", "c"} {
		_, err := once.Do(ctx, scope, key, nil, countRuns(&runs, 1))
		require.NoError(t, err)
	}
	_, err := once.Do(ctx, scope, "a", nil, countRuns(&runs, 1)) // a is referenced
	require.NoError(t, err)
	_, err = once.Do(ctx, scope, "d", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	entries, _ := once.LocalCacheStats(scope)
	require.Equal(t, 3, entries)
	before := cs.claims.Load()
	_, err = once.Do(ctx, scope, "a", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	require.Equal(t, before, cs.claims.Load(), "the referenced entry survived")
	_, err = once.Do(ctx, scope, "b", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	require.Equal(t, before+1, cs.claims.Load(), "the unreferenced entry was evicted")
	require.EqualValues(t, 4, runs.Load())
	for i := range 100 {
		_, err := once.Do(ctx, scope, "many"+string(rune('A'+i%26))+string(rune('a'+i/26)), nil, countRuns(&runs, 1))
		require.NoError(t, err)
		entries, _ := once.LocalCacheStats(scope)
		require.LessOrEqual(t, entries, 3)
	}
}

func TestLocalCacheBoundsBytes(t *testing.T) {
	ctx := context.Background()
	const maxBytes = 4096
	k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 1000, MaxBytes: maxBytes})
	scope := k.Scope("s")
	big := strings.Repeat("x", 600)
	for i := range 50 {
		key := "k" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		_, err := once.Do(ctx, scope, key, nil, func(context.Context) (string, error) { return big, nil })
		require.NoError(t, err)
		entries, bytes := once.LocalCacheStats(scope)
		require.LessOrEqual(t, bytes, maxBytes)
		require.Positive(t, entries)
	}
	// A record larger than the whole budget is not cached.
	huge := strings.Repeat("y", 2*maxBytes)
	_, err := once.Do(ctx, scope, "huge", nil, func(context.Context) (string, error) { return huge, nil })
	require.NoError(t, err)
	before := cs.claims.Load()
	v, err := once.Do(ctx, scope, "huge", nil, func(context.Context) (string, error) { return "", nil })
	require.NoError(t, err)
	require.Equal(t, huge, v)
	require.Equal(t, before+1, cs.claims.Load())
}

func TestLocalCacheNotUsedInsideDoTx(t *testing.T) {
	ctx := context.Background()
	k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8})
	scope := k.Scope("s")
	var runs atomic.Int64
	var txs []*fakeTx
	for range 3 {
		_, err := once.DoTx(ctx, scope, "k", nil, fakeBegin(cs, &txs, nil), func(ctx context.Context, _ *fakeTx) (int, error) {
			return countRuns(&runs, 1)(ctx)
		})
		require.NoError(t, err)
	}
	require.EqualValues(t, 3, cs.claims.Load())
	entries, _ := once.LocalCacheStats(scope)
	require.Zero(t, entries)
}

func TestLocalCacheTurnedOffForOneScope(t *testing.T) {
	ctx := context.Background()
	k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8})
	scope := k.Scope("s").With(once.WithLocalCache(once.LocalCache{}))
	var runs atomic.Int64
	for range 3 {
		_, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 1))
		require.NoError(t, err)
	}
	require.EqualValues(t, 3, cs.claims.Load())
}

func TestLocalCacheRejectsNegativeConfig(t *testing.T) {
	for _, lc := range []once.LocalCache{{MaxEntries: -1}, {MaxEntries: 1, MaxBytes: -1}, {MaxEntries: 1, TTL: -time.Second}} {
		cs := &countingStore{Store: memory.New(nil)}
		scope := once.New(cs, once.WithLocalCache(lc)).Scope("s")
		_, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
		var invalid *once.InvalidInputError
		require.ErrorAs(t, err, &invalid)
		require.Equal(t, "local_cache", invalid.Field)
		require.Zero(t, cs.claims.Load())
	}
}

// waitJoined blocks until n calls have joined a claim in flight.
func waitJoined(t *testing.T, scope once.Scope, n int64) {
	t.Helper()
	waitFor(t, func() bool { return once.LocalCacheJoined(scope) >= n })
}

// waitFor polls cond; it fails the test, instead of hanging it, when cond
// stays false for a minute (a synchronisation guard, not a timing check).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			require.FailNow(t, "condition never held")
		}
	}
}

func TestLocalCacheDuplicatesMakeOneStoreCall(t *testing.T) {
	const n = 32
	t.Run("leader runs fn, duplicates get in progress", func(t *testing.T) {
		k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8}, once.WithLease(time.Minute))
		cs.gate = make(chan struct{})
		scope := k.Scope("s")
		var runs atomic.Int64
		errs := runDuplicates(t, n, scope, cs, cacheFP("a"), countRuns(&runs, 1), n-1)
		require.EqualValues(t, 1, cs.claims.Load())
		require.EqualValues(t, 1, runs.Load())
		inProgress := 0
		for _, err := range errs {
			if err != nil {
				var ip *once.InProgressError
				require.ErrorAs(t, err, &ip)
				require.Equal(t, time.Minute, ip.LeaseRemaining)
				inProgress++
			}
		}
		require.Equal(t, n-1, inProgress)
	})
	t.Run("waiting duplicates get the outcome", func(t *testing.T) {
		k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8}, once.WithWait(time.Minute))
		cs.gate = make(chan struct{})
		scope := k.Scope("s")
		var runs atomic.Int64
		errs := runDuplicates(t, n, scope, cs, cacheFP("a"), countRuns(&runs, 1), n-1)
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.EqualValues(t, 1, runs.Load())
	})
	t.Run("completed record read once for all", func(t *testing.T) {
		k, cs, mem := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8})
		_, err := once.Do(context.Background(), once.New(mem).Scope("s"), "k", cacheFP("a"), func(context.Context) (int, error) { return 1, nil })
		require.NoError(t, err)
		cs.gate = make(chan struct{})
		scope := k.Scope("s")
		var runs atomic.Int64
		errs := runDuplicates(t, n, scope, cs, cacheFP("a"), countRuns(&runs, 2), n-1)
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.EqualValues(t, 1, cs.claims.Load())
		require.Zero(t, runs.Load())
	})
	t.Run("another fingerprint does not join", func(t *testing.T) {
		k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8})
		cs.gate = make(chan struct{})
		scope := k.Scope("s")
		done := make(chan error, 2)
		go func() {
			_, err := once.Do(context.Background(), scope, "k", cacheFP("a"), func(context.Context) (int, error) { return 1, nil })
			done <- err
		}()
		waitFor(t, func() bool { return cs.claims.Load() >= 1 })
		go func() {
			_, err := once.Do(context.Background(), scope, "k", cacheFP("b"), func(context.Context) (int, error) { return 2, nil })
			done <- err
		}()
		waitFor(t, func() bool { return cs.claims.Load() >= 2 })
		close(cs.gate)
		var reused int
		for range 2 {
			if err := <-done; errors.Is(err, once.ErrKeyReused) || errors.Is(err, once.ErrInProgress) {
				reused++
			} else {
				require.NoError(t, err)
			}
		}
		require.Equal(t, 1, reused)
		require.Zero(t, once.LocalCacheJoined(scope))
	})
}

// runDuplicates starts n calls of fn on one key, waits until joined of
// them wait for the first one's claim, opens the store's gate, and returns
// every call's error.
func runDuplicates(t *testing.T, n int, scope once.Scope, cs *countingStore, f once.Fingerprint, fn func(context.Context) (int, error), joined int64) []error {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			v, err := once.Do(context.Background(), scope, "k", f, fn)
			if err == nil && v == 0 {
				err = errors.New("zero value without error")
			}
			errs[i] = err
		})
	}
	waitJoined(t, scope, joined)
	close(cs.gate)
	wg.Wait()
	return errs
}

func TestLocalCacheLeaderCancelledDuplicatesAskTheStore(t *testing.T) {
	k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8})
	cs.gate = make(chan struct{})
	scope := k.Scope("s")
	leaderCtx, cancel := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() {
		_, err := once.Do(leaderCtx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
		leaderDone <- err
	}()
	waitFor(t, func() bool { return cs.claims.Load() >= 1 })
	followerDone := make(chan error, 1)
	go func() {
		v, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 2, nil })
		if err == nil && v != 2 {
			err = errors.New("follower did not run fn")
		}
		followerDone <- err
	}()
	waitJoined(t, scope, 1)
	cancel()
	var storeErr *once.StoreError
	require.ErrorAs(t, <-leaderDone, &storeErr)
	require.ErrorIs(t, storeErr, context.Canceled)
	close(cs.gate)
	require.NoError(t, <-followerDone, "the follower's live context made its own claim")
	require.EqualValues(t, 2, cs.claims.Load())
}

func TestLocalCacheFollowerCancelledReturnsAtOnce(t *testing.T) {
	k, cs, _ := cachedKeeper(newFakeClock(), once.LocalCache{MaxEntries: 8})
	cs.gate = make(chan struct{})
	defer close(cs.gate)
	scope := k.Scope("s")
	go func() {
		_, _ = once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	}()
	waitFor(t, func() bool { return cs.claims.Load() >= 1 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 2, nil })
		done <- err
	}()
	waitJoined(t, scope, 1)
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	require.EqualValues(t, 1, cs.claims.Load())
}

// TestLocalCacheConcurrentMixedKeys hammers a small cache (evicting all the
// time) from many goroutines over many keys and two fingerprints: fn runs
// at most once per key, and every answer is that run's value, in progress,
// or ErrKeyReused for the other fingerprint.
func TestLocalCacheConcurrentMixedKeys(t *testing.T) {
	mem := memory.New(nil)
	cs := &countingStore{Store: mem}
	scope := once.New(cs, once.WithLocalCache(once.LocalCache{MaxEntries: 4, MaxBytes: 2048}), once.WithWait(time.Second)).Scope("s")
	const keys, workers, calls = 16, 16, 200
	var runs [keys]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				k := (w*7 + i) % keys
				f := cacheFP([]string{"a", "b"}[(w+i/3)%2])
				v, err := once.Do(context.Background(), scope, "k"+string(rune('a'+k)), f, func(context.Context) (int, error) {
					runs[k].Add(1)
					return k + 1, nil
				})
				switch {
				case errors.Is(err, once.ErrKeyReused), errors.Is(err, once.ErrInProgress):
				case err != nil:
					errs <- err
					return
				case v != k+1:
					errs <- errors.New("wrong value")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	for k := range keys {
		require.LessOrEqual(t, runs[k].Load(), int64(1), "key %d", k)
	}
	entries, bytes := once.LocalCacheStats(scope)
	require.LessOrEqual(t, entries, 4)
	require.LessOrEqual(t, bytes, 2048)
	require.Less(t, cs.claims.Load(), int64(workers*calls), "some answers came from the cache or a shared claim")
}

// A record read from the store is cached no longer than the time it has
// left there (backends.Record.RetentionRemaining), even when the reading
// Keeper's TTL and retention are longer: after it expired in the store, fn
// runs again.
func TestLocalCacheEntryNeverOutlivesRemainingRetention(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	k, cs, mem := cachedKeeper(clock, once.LocalCache{MaxEntries: 8, TTL: time.Hour}, once.WithRetention(time.Hour))
	other := once.New(mem, once.WithRetention(time.Minute)).Scope("s")
	_, err := once.Do(ctx, other, "k", nil, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	clock.Advance(time.Minute - time.Second)
	scope := k.Scope("s")
	var runs atomic.Int64
	for range 3 {
		v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
		require.NoError(t, err)
		require.Equal(t, 1, v)
	}
	require.EqualValues(t, 1, cs.claims.Load(), "cached while the record lives")
	clock.Advance(time.Second - time.Nanosecond)
	v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.EqualValues(t, 1, cs.claims.Load(), "still cached a nanosecond before the record's end")
	clock.Advance(time.Nanosecond)
	v, err = once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 2, v, "the record expired in the store, and so did the entry")
	require.EqualValues(t, 1, runs.Load())
}
