package localcache_test

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
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/reconcile"
)

func TestHotReplayMakesNoStoreCall(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 8})
	scope := w.keeper.Scope("s")
	var runs atomic.Int64
	v, err := once.Do(ctx, scope, "hot", cacheFP("a"), countRuns(&runs, 7))
	require.NoError(t, err)
	require.Equal(t, 7, v)
	require.EqualValues(t, 1, w.count.claims.Load())
	for range 100 {
		out, err := once.DoOutcome(ctx, scope, "hot", cacheFP("a"), countRuns(&runs, 8))
		require.NoError(t, err)
		require.Equal(t, once.Outcome[int]{Value: 7, Status: once.Replayed}, out)
	}
	require.EqualValues(t, 1, w.count.claims.Load(), "replays answered from the cache")
	require.EqualValues(t, 1, runs.Load())
}

func TestCachesFinalErrorsAndStoreReads(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 8})
	// A record completed by another Keeper on the same store is read once.
	other := once.New(w.mem).Scope("s")
	_, err := once.Do(ctx, other, "declined", nil, func(context.Context) (int, error) {
		return 0, once.Final(errors.New("card declined"))
	})
	require.ErrorContains(t, err, "card declined")
	scope := w.keeper.Scope("s")
	for range 10 {
		_, err := once.Do(ctx, scope, "declined", cacheFP("x"), func(context.Context) (int, error) { return 1, nil })
		require.ErrorContains(t, err, "card declined")
	}
	require.EqualValues(t, 1, w.count.claims.Load())
}

func TestFingerprintMismatchIsNeverServed(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 8})
	scope := w.keeper.Scope("s")
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
	require.EqualValues(t, 2, w.count.claims.Load(), "mismatches were answered from the cache too")
}

func TestTTLNeverOutlivesRetention(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	w := newWorld(t, clock, localcache.Config{MaxEntries: 8, TTL: time.Hour}, once.WithRetention(time.Minute))
	scope := w.keeper.Scope("s")
	var runs atomic.Int64
	_, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	clock.Advance(time.Minute - time.Nanosecond)
	v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.EqualValues(t, 1, w.count.claims.Load(), "still cached within retention")
	clock.Advance(time.Nanosecond)
	v, err = once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 2, v, "the record expired with its retention, and so did the entry")
	require.EqualValues(t, 2, runs.Load())
}

func TestTTLShorterThanRetention(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	w := newWorld(t, clock, localcache.Config{MaxEntries: 8, TTL: 10 * time.Second})
	scope := w.keeper.Scope("s")
	var runs atomic.Int64
	_, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	clock.Advance(10 * time.Second)
	v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 1, v, "replayed from the store")
	require.EqualValues(t, 2, w.count.claims.Load(), "the entry expired after TTL")
	require.EqualValues(t, 1, runs.Load())
}

// A Delete that does not pass through the cache (the CLI, another
// process) is seen after TTL at most: the documented staleness.
func TestServesARecordDeletedElsewhereForAtMostTTL(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	w := newWorld(t, clock, localcache.Config{MaxEntries: 8, TTL: 5 * time.Second})
	scope := w.keeper.Scope("s")
	var runs atomic.Int64
	_, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	deleted, err := w.mem.Delete(ctx, "s", "k")
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

// A Delete through the cached store (its backends.Admin) drops the entry at
// once: the next call is a new intent.
func TestDeleteThroughTheCacheIsSeenAtOnce(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	mem := memory.New(&memory.Config{Now: clock.Now})
	store := cached(t, mem, localcache.Config{TTL: time.Hour, Now: clock.Now})
	admin, ok := store.(backends.Admin)
	require.True(t, ok, "the cache of a store with Admin has Admin")
	scope := once.New(store).Scope("s")
	var runs atomic.Int64
	_, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	entries, _ := localcache.Stats(store)
	require.Equal(t, 1, entries)
	rec, err := admin.Get(ctx, "s", "k")
	require.NoError(t, err)
	require.NotZero(t, rec.State)
	require.Equal(t, backends.StateCompleted, rec.State)
	deleted, err := admin.Delete(ctx, "s", "k")
	require.NoError(t, err)
	require.True(t, deleted)
	v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 2, v, "a new intent")
}

// A record read from the store just before a Delete through the cache is
// not cached after the Delete: the Claim that read it ends after the
// Delete dropped the key.
func TestClaimReadingBeforeADeleteDoesNotCacheTheRecord(t *testing.T) {
	ctx := context.Background()
	mem := memory.New(nil)
	_, err := once.Do(ctx, once.New(mem).Scope("s"), "k", nil, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	read := make(chan struct{})
	resume := make(chan struct{})
	slow := &hookStore{Store: mem}
	slow.claim = func(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
		res, err := mem.Claim(ctx, p)
		close(read)
		<-resume
		return res, err
	}
	store := cached(t, slow, localcache.Config{TTL: time.Hour})
	scope := once.New(store).Scope("s")
	done := make(chan int, 1)
	go func() {
		v, _ := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 2, nil })
		done <- v
	}()
	<-read
	deleted, err := store.(backends.Admin).Delete(ctx, "s", "k")
	require.NoError(t, err)
	require.True(t, deleted)
	close(resume)
	require.Equal(t, 1, <-done, "the Claim read the record before the Delete")
	slow.claim = nil
	v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 3, nil })
	require.NoError(t, err)
	require.Equal(t, 3, v, "the record the Claim read is not served after the Delete")
}

func TestEvictsByEntriesWithSecondChance(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 3})
	scope := w.keeper.Scope("s")
	var runs atomic.Int64
	for _, key := range []string{"a", "b", "c"} {
		_, err := once.Do(ctx, scope, key, nil, countRuns(&runs, 1))
		require.NoError(t, err)
	}
	_, err := once.Do(ctx, scope, "a", nil, countRuns(&runs, 1)) // a is referenced
	require.NoError(t, err)
	_, err = once.Do(ctx, scope, "d", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	entries, _ := localcache.Stats(w.cached)
	require.Equal(t, 3, entries)
	before := w.count.claims.Load()
	_, err = once.Do(ctx, scope, "a", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	require.Equal(t, before, w.count.claims.Load(), "the referenced entry survived")
	_, err = once.Do(ctx, scope, "b", nil, countRuns(&runs, 1))
	require.NoError(t, err)
	require.Equal(t, before+1, w.count.claims.Load(), "the unreferenced entry was evicted")
	require.EqualValues(t, 4, runs.Load())
	for i := range 100 {
		_, err := once.Do(ctx, scope, "many"+string(rune('A'+i%26))+string(rune('a'+i/26)), nil, countRuns(&runs, 1))
		require.NoError(t, err)
		entries, _ := localcache.Stats(w.cached)
		require.LessOrEqual(t, entries, 3)
	}
}

func TestBoundsBytes(t *testing.T) {
	ctx := context.Background()
	const maxBytes = 4096
	w := newWorld(t, newFakeClock(), localcache.Config{MaxBytes: maxBytes})
	scope := w.keeper.Scope("s")
	big := strings.Repeat("x", 600)
	for i := range 50 {
		key := "k" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		_, err := once.Do(ctx, scope, key, nil, func(context.Context) (string, error) { return big, nil })
		require.NoError(t, err)
		entries, bytes := localcache.Stats(w.cached)
		require.LessOrEqual(t, bytes, maxBytes)
		require.Positive(t, entries)
	}
	// A record larger than the whole budget is not cached.
	huge := strings.Repeat("y", 2*maxBytes)
	_, err := once.Do(ctx, scope, "huge", nil, func(context.Context) (string, error) { return huge, nil })
	require.NoError(t, err)
	before := w.count.claims.Load()
	v, err := once.Do(ctx, scope, "huge", nil, func(context.Context) (string, error) { return "", nil })
	require.NoError(t, err)
	require.Equal(t, huge, v)
	require.Equal(t, before+1, w.count.claims.Load())
}

func TestNewRejectsWhatItCannotWrap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store backends.Store
		cfg   localcache.Config
		field string
	}{
		{"negative MaxEntries", memory.New(nil), localcache.Config{MaxEntries: -1}, "MaxEntries"},
		{"negative MaxBytes", memory.New(nil), localcache.Config{MaxBytes: -1}, "MaxBytes"},
		{"negative TTL", memory.New(nil), localcache.Config{TTL: -time.Second}, "TTL"},
		{"nil store", nil, localcache.Config{}, "store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := localcache.New(tc.store, &tc.cfg)
			require.Nil(t, s)
			var ce *localcache.ConfigError
			require.ErrorAs(t, err, &ce)
			require.Equal(t, tc.field, ce.Field)
		})
	}
	s, err := localcache.New(memory.New(nil), nil)
	require.NoError(t, err, "a nil Config means every default")
	require.NotNil(t, s)
}

// The cache hides none of the store's optional interfaces from the core:
// backends.As finds them through it, and a Keeper over the cache waits
// on the store's Watch and reconciles through its List.
func TestOptionalInterfacesReachableThroughTheCache(t *testing.T) {
	store := cached(t, memory.New(nil), localcache.Config{})
	_, ok := backends.As[backends.Watcher](store)
	require.True(t, ok)
	_, ok = backends.As[backends.Lister](store)
	require.True(t, ok)
	_, err := reconcile.New(once.New(store), func(context.Context, reconcile.HeldKey) (reconcile.Verdict[int], error) {
		return reconcile.Verdict[int]{}, nil
	}, reconcile.Config{})
	require.NoError(t, err)
	_, ok = cached(t, nullStore{}, localcache.Config{}).(backends.Admin)
	require.False(t, ok, "the cache of a store without Admin has none")
}

func TestDuplicatesMakeOneStoreCall(t *testing.T) {
	const n = 32
	t.Run("leader runs fn, duplicates get in progress", func(t *testing.T) {
		w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 8}, once.WithLease(time.Minute))
		w.count.gate = make(chan struct{})
		var runs atomic.Int64
		errs := runDuplicates(t, n, w, w.keeper.Scope("s"), cacheFP("a"), countRuns(&runs, 1), n-1)
		require.EqualValues(t, 1, w.count.claims.Load())
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
		w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 8}, once.WithWait(time.Minute))
		w.count.gate = make(chan struct{})
		var runs atomic.Int64
		errs := runDuplicates(t, n, w, w.keeper.Scope("s"), cacheFP("a"), countRuns(&runs, 1), n-1)
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.EqualValues(t, 1, runs.Load())
	})
	t.Run("completed record read once for all", func(t *testing.T) {
		w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 8})
		_, err := once.Do(context.Background(), once.New(w.mem).Scope("s"), "k", cacheFP("a"), func(context.Context) (int, error) { return 1, nil })
		require.NoError(t, err)
		w.count.gate = make(chan struct{})
		var runs atomic.Int64
		errs := runDuplicates(t, n, w, w.keeper.Scope("s"), cacheFP("a"), countRuns(&runs, 2), n-1)
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.EqualValues(t, 1, w.count.claims.Load())
		require.Zero(t, runs.Load())
	})
	t.Run("another fingerprint does not join", func(t *testing.T) {
		w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 8})
		w.count.gate = make(chan struct{})
		scope := w.keeper.Scope("s")
		done := make(chan error, 2)
		go func() {
			_, err := once.Do(context.Background(), scope, "k", cacheFP("a"), func(context.Context) (int, error) { return 1, nil })
			done <- err
		}()
		waitFor(t, func() bool { return w.count.claims.Load() >= 1 })
		go func() {
			_, err := once.Do(context.Background(), scope, "k", cacheFP("b"), func(context.Context) (int, error) { return 2, nil })
			done <- err
		}()
		waitFor(t, func() bool { return w.count.claims.Load() >= 2 })
		close(w.count.gate)
		var reused int
		for range 2 {
			if err := <-done; errors.Is(err, once.ErrKeyReused) || errors.Is(err, once.ErrInProgress) {
				reused++
			} else {
				require.NoError(t, err)
			}
		}
		require.Equal(t, 1, reused)
		require.Zero(t, localcache.Joined(w.cached))
	})
}

// runDuplicates starts n calls of fn on key "k" of scope, a scope of w's
// Keeper, waits until joined of them wait for the first one's Claim,
// opens the store's gate, and returns every call's error.
func runDuplicates(t *testing.T, n int, w world, scope once.Scope, f once.Fingerprint, fn func(context.Context) (int, error), joined int64) []error {
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
	waitJoined(t, w.cached, joined)
	close(w.count.gate)
	wg.Wait()
	return errs
}

func TestLeaderCancelledDuplicatesAskTheStore(t *testing.T) {
	w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 8})
	w.count.gate = make(chan struct{})
	scope := w.keeper.Scope("s")
	leaderCtx, cancel := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() {
		_, err := once.Do(leaderCtx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
		leaderDone <- err
	}()
	waitFor(t, func() bool { return w.count.claims.Load() >= 1 })
	followerDone := make(chan error, 1)
	go func() {
		v, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 2, nil })
		if err == nil && v != 2 {
			err = errors.New("follower did not run fn")
		}
		followerDone <- err
	}()
	waitJoined(t, w.cached, 1)
	cancel()
	var storeErr *once.StoreError
	require.ErrorAs(t, <-leaderDone, &storeErr)
	require.ErrorIs(t, storeErr, context.Canceled)
	close(w.count.gate)
	require.NoError(t, <-followerDone, "the follower's live context made its own claim")
	require.EqualValues(t, 2, w.count.claims.Load())
}

func TestFollowerCancelledReturnsAtOnce(t *testing.T) {
	w := newWorld(t, newFakeClock(), localcache.Config{MaxEntries: 8})
	w.count.gate = make(chan struct{})
	defer close(w.count.gate)
	scope := w.keeper.Scope("s")
	go func() {
		_, _ = once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	}()
	waitFor(t, func() bool { return w.count.claims.Load() >= 1 })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 2, nil })
		done <- err
	}()
	waitJoined(t, w.cached, 1)
	cancel()
	err := <-done
	require.ErrorIs(t, err, context.Canceled)
	require.EqualValues(t, 1, w.count.claims.Load())
}

// TestConcurrentMixedKeys hammers a small cache (evicting all the time)
// from many goroutines over many keys and two fingerprints: fn runs at
// most once per key, and every answer is that run's value, in progress,
// or ErrKeyReused for the other fingerprint.
func TestConcurrentMixedKeys(t *testing.T) {
	cs := &countingStore{Store: memory.New(nil)}
	store := cached(t, cs, localcache.Config{MaxEntries: 4, MaxBytes: 2048})
	scope := once.New(store, once.WithWait(time.Second)).Scope("s")
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
	entries, bytes := localcache.Stats(store)
	require.LessOrEqual(t, entries, 4)
	require.LessOrEqual(t, bytes, 2048)
	require.Less(t, cs.claims.Load(), int64(workers*calls), "some answers came from the cache or a shared claim")
}

// A record read from the store is cached no longer than the time it has
// left there (backends.Record.ExpiresIn), even when the reading
// Keeper's TTL and retention are longer: after it expired in the store, fn
// runs again.
func TestEntryNeverOutlivesRemainingRetention(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	w := newWorld(t, clock, localcache.Config{MaxEntries: 8, TTL: time.Hour}, once.WithRetention(time.Hour))
	other := once.New(w.mem, once.WithRetention(time.Minute)).Scope("s")
	_, err := once.Do(ctx, other, "k", nil, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	clock.Advance(time.Minute - time.Second)
	scope := w.keeper.Scope("s")
	var runs atomic.Int64
	for range 3 {
		v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
		require.NoError(t, err)
		require.Equal(t, 1, v)
	}
	require.EqualValues(t, 1, w.count.claims.Load(), "cached while the record lives")
	clock.Advance(time.Second - time.Nanosecond)
	v, err := once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 1, v)
	require.EqualValues(t, 1, w.count.claims.Load(), "still cached a nanosecond before the record's end")
	clock.Advance(time.Nanosecond)
	v, err = once.Do(ctx, scope, "k", nil, countRuns(&runs, 2))
	require.NoError(t, err)
	require.Equal(t, 2, v, "the record expired in the store, and so did the entry")
	require.EqualValues(t, 1, runs.Load())
}

// A Claim by the owner of the key's remembered claim is a re-send (the
// record keeps the first Claim's fingerprint) or, after the record was
// deleted or expired, a new claim with the same token (the record holds
// the new fingerprint): the cache tells neither from the answer, so with
// another fingerprint it caches no completion, and every answer is the
// store's. The conformance suite's model found the cache caching the
// re-send's fingerprint, then the first Claim's after a new claim.
func TestOwnerClaimingAgainCachesNoGuessedFingerprint(t *testing.T) {
	ctx := context.Background()
	store := cached(t, memory.New(nil), localcache.Config{})
	claim := func(key, owner string, fp []byte) backends.ClaimResult {
		res, err := store.Claim(ctx, backends.ClaimParams{Scope: "s", Key: key, Owner: owner, Fingerprint: fp, Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		return res
	}
	complete := func(key, owner string) {
		applied, err := store.Complete(ctx, backends.CompleteParams{Scope: "s", Key: key, Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, applied)
	}
	// A re-send with no fingerprint: the record keeps fp-a.
	require.True(t, claim("resent", "owner-a", []byte("fp-a")).Claimed)
	require.True(t, claim("resent", "owner-a", nil).Claimed)
	complete("resent", "owner-a")
	for range 2 { // from the store, then from the cache it filled
		res := claim("resent", "owner-b", []byte("fp-b"))
		require.Equal(t, backends.StateCompleted, res.Existing.State)
		require.Equal(t, []byte("fp-a"), res.Existing.Fingerprint)
	}
	// A new claim by the same token after a delete: the record holds none.
	require.True(t, claim("again", "owner-c", []byte("fp-c")).Claimed)
	_, err := store.(backends.Admin).Delete(ctx, "s", "again")
	require.NoError(t, err)
	require.True(t, claim("again", "owner-c", nil).Claimed)
	complete("again", "owner-c")
	for range 2 {
		res := claim("again", "owner-d", []byte("fp-d"))
		require.Equal(t, backends.StateCompleted, res.Existing.State)
		require.Empty(t, res.Existing.Fingerprint)
	}
	// The same fingerprint both times: the completion is cached.
	require.True(t, claim("same", "owner-e", []byte("fp-e")).Claimed)
	require.True(t, claim("same", "owner-e", []byte("fp-e")).Claimed)
	before, _ := localcache.Stats(store)
	complete("same", "owner-e")
	after, _ := localcache.Stats(store)
	require.Equal(t, before+1, after)
}
