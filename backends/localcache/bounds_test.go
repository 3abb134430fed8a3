package localcache_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/backends/memory"
)

// failFirstClaimStore fails the first Claim, after gate opens, with a store
// error (an overloaded store's timeout); every other call goes through.
type failFirstClaimStore struct {
	backends.Store
	gate   chan struct{}
	claims atomic.Int64
}

func (s *failFirstClaimStore) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	if s.claims.Add(1) == 1 {
		<-s.gate
		return backends.ClaimResult{}, errors.New("store overloaded: timeout")
	}
	return s.Store.Claim(ctx, p)
}

// TestFailedLeaderFollowersShareOneClaim: when the Claim of the
// duplicate leading a flight fails (a store timeout: the moment the store
// is least able to take a burst), the duplicates that joined it make one
// store call between them, not one each.
func TestFailedLeaderFollowersShareOneClaim(t *testing.T) {
	const n = 16
	st := &failFirstClaimStore{Store: memory.New(nil), gate: make(chan struct{})}
	store := cached(t, st, localcache.Config{MaxEntries: 8})
	scope := once.New(store).Scope("s")
	var runs atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) {
				runs.Add(1)
				return 1, nil
			})
		})
	}
	waitJoined(t, store, n-1)
	close(st.gate)
	wg.Wait()
	require.EqualValues(t, 1, runs.Load())
	require.EqualValues(t, 2, st.claims.Load(),
		"%d duplicates made %d store Claims after their leader's failed", n-1, st.claims.Load()-1)
	var storeErrs, done int
	for _, err := range errs {
		var se *once.StoreError
		switch {
		case errors.As(err, &se):
			storeErrs++
		case err == nil:
			done++
		default:
			require.ErrorIs(t, err, once.ErrInProgress)
		}
	}
	require.Equal(t, 1, storeErrs, "only the failed leader sees the store error")
	require.Equal(t, 1, done)
}

// nullStore claims every key and releases it; it keeps nothing, so the
// heap growth of a Keeper over it is the Keeper's own.
type nullStore struct{ backends.Store }

func (nullStore) Claim(context.Context, backends.ClaimParams) (backends.ClaimResult, error) {
	return backends.ClaimResult{Claimed: true}, nil
}
func (nullStore) Release(context.Context, backends.ReleaseParams) (bool, error) { return true, nil }
func (nullStore) Renew(context.Context, backends.RenewParams) (bool, error)     { return true, nil }

// TestMemoryBoundedByMaxBytes: a burst of distinct keys whose fn fails
// retryably (a downstream outage) leaves nothing in the local cache and
// does not grow the heap past MaxBytes: every won claim is forgotten when
// it is released.
func TestMemoryBoundedByMaxBytes(t *testing.T) {
	const n, maxBytes = 20_000, 64 << 10
	store := cached(t, nullStore{}, localcache.Config{MaxBytes: maxBytes})
	scope := once.New(store).Scope("s")
	fp := once.Fingerprint(strings.Repeat("f", 64))
	errDown := errors.New("downstream unavailable")
	heap := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := range n {
		key := fmt.Sprintf("%0200d", i)
		_, err := once.Do(context.Background(), scope, key, fp, func(context.Context) (int, error) { return 0, errDown })
		require.ErrorIs(t, err, errDown)
	}
	grown := int64(heap()) - int64(before)
	entries, bytes := localcache.Owned(store)
	runtime.KeepAlive(scope)
	t.Logf("heap grew %d KiB after %d retryable failures (MaxBytes %d KiB)", grown>>10, n, maxBytes>>10)
	require.Zero(t, entries, "claims that settled are still remembered")
	require.Zero(t, bytes)
	require.Less(t, grown, int64(8*maxBytes), "the cache holds far more than MaxBytes for claims that never completed")
}

// lossyStore fails every Complete (lose) or reports it lost (fence).
type lossyStore struct {
	backends.Store
	lose, fence bool
}

func (s *lossyStore) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	switch {
	case s.lose:
		return false, errors.New("store down")
	case s.fence:
		return false, nil
	}
	return s.Store.Complete(ctx, p)
}

// TestForgetsEveryClaimThatSettles: however a claim ends — completed,
// final error, retryable error, panic, hold, a completion the store failed
// (unrecorded) or fenced off (lease lost) — the local cache remembers
// nothing of it afterwards.
func TestForgetsEveryClaimThatSettles(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lose, fence bool
		fn          func(context.Context) (int, error)
	}{
		{"value", false, false, func(context.Context) (int, error) { return 1, nil }},
		{"final", false, false, func(context.Context) (int, error) { return 0, once.Final(errors.New("declined")) }},
		{"retryable", false, false, func(context.Context) (int, error) { return 0, errors.New("down") }},
		{"panic", false, false, func(context.Context) (int, error) { panic("fn panics") }},
		{"hold", false, false, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) }},
		{"unrecorded", true, false, func(context.Context) (int, error) { return 1, nil }},
		{"lease-lost", false, true, func(context.Context) (int, error) { return 1, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := cached(t, &lossyStore{Store: memory.New(nil), lose: tc.lose, fence: tc.fence}, localcache.Config{MaxEntries: 8})
			scope := once.New(store).Scope("s")
			func() {
				defer func() { _ = recover() }()
				_, _ = once.Do(context.Background(), scope, "k", once.Fingerprint("fp"), tc.fn)
			}()
			entries, bytes := localcache.Owned(store)
			require.Zero(t, entries)
			require.Zero(t, bytes)
		})
	}
}

// TestRunningClaimsWithinMaxBytes: the claims in flight the local cache
// remembers (so that their completion fills it) take at most MaxBytes
// however many run at once; those past it are not remembered, and every
// completion still answers correctly.
func TestRunningClaimsWithinMaxBytes(t *testing.T) {
	const n, maxBytes = 64, 2 << 10
	store := cached(t, memory.New(nil), localcache.Config{MaxBytes: maxBytes})
	scope := once.New(store).Scope("s")
	release := make(chan struct{})
	var started sync.WaitGroup
	var wg sync.WaitGroup
	started.Add(n)
	for i := range n {
		wg.Go(func() {
			v, err := once.Do(context.Background(), scope, fmt.Sprintf("key-%03d", i), nil, func(context.Context) (int, error) {
				started.Done()
				<-release
				return i, nil
			})
			require.NoError(t, err)
			require.Equal(t, i, v)
		})
	}
	started.Wait()
	entries, bytes := localcache.Owned(store)
	require.Positive(t, entries)
	require.Less(t, entries, n, "MaxBytes did not bound the claims remembered")
	require.LessOrEqual(t, bytes, maxBytes)
	close(release)
	wg.Wait()
	entries, bytes = localcache.Owned(store)
	require.Zero(t, entries)
	require.Zero(t, bytes)
	for i := range n {
		v, err := once.Do(context.Background(), scope, fmt.Sprintf("key-%03d", i), nil, func(context.Context) (int, error) { return -1, nil })
		require.NoError(t, err)
		require.Equal(t, i, v)
	}
}
