package once_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

var errStoreDown = errors.New("connection refused")

func TestClaimFailureNeverRunsFn(t *testing.T) {
	store := newFaultStore(memory.New(nil))
	store.set(func(f *faultStore) {
		f.claim = func(context.Context, backends.ClaimParams) (backends.ClaimResult, error) {
			return backends.ClaimResult{}, errStoreDown
		}
	})
	ran := false
	_, err := once.Do(context.Background(), once.New(store).Scope("s"), "k", nil,
		func(context.Context) (int, error) { ran = true; return 1, nil })
	var storeErr *once.StoreError
	require.ErrorAs(t, err, &storeErr)
	assert.Equal(t, "claim", storeErr.Op)
	assert.ErrorAs(t, err, new(*once.StoreError))
	assert.ErrorIs(t, err, errStoreDown)
	assert.False(t, ran, "fail closed: no fn while the store is down")
}

func TestCompleteFailureReturnsValueAndUnrecorded(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	store := newFaultStore(memory.New(&memory.Config{Now: clock.Now}))
	store.set(func(f *faultStore) {
		f.complete = func(context.Context, backends.CompleteParams) (bool, error) { return false, errStoreDown }
	})
	scope := once.New(store, once.WithLease(30*time.Second)).Scope("s")
	var runs atomic.Int32
	fn := func(context.Context) (string, error) { runs.Add(1); return "paid", nil }
	out, err := once.DoOutcome(ctx, scope, "k", nil, fn)
	assert.ErrorIs(t, err, once.ErrOutcomeUnrecorded)
	assert.ErrorIs(t, err, errStoreDown)
	assert.Equal(t, "paid", out.Value, "the value is not lost")
	assert.NotEqual(t, once.Recorded, out.Status)
	assert.Equal(t, 3, store.Calls("complete"), "completion is retried")

	store.set(func(f *faultStore) { f.complete = nil })
	_, err = once.Do(ctx, scope, "k", nil, fn)
	assert.ErrorIs(t, err, once.ErrInProgress, "the key stays claimed until its lease ends")
	clock.Advance(31 * time.Second)
	_, err = once.Do(ctx, scope, "k", nil, fn)
	require.NoError(t, err)
	assert.Equal(t, int32(2), runs.Load(), "documented: an unrecorded key runs again after its lease")
}

func TestCompleteRetriedAfterTransientFailure(t *testing.T) {
	ctx := context.Background()
	mem := memory.New(nil)
	store := newFaultStore(mem)
	var failures atomic.Int32
	store.set(func(f *faultStore) {
		f.complete = func(ctx context.Context, p backends.CompleteParams) (bool, error) {
			if failures.Add(1) == 1 {
				return false, errStoreDown
			}
			return mem.Complete(ctx, p)
		}
	})
	scope := once.New(store).Scope("s")
	out, err := once.DoOutcome(ctx, scope, "k", nil, func(context.Context) (int, error) { return 5, nil })
	require.NoError(t, err)
	assert.Equal(t, once.Recorded, out.Status)
	again, err := once.DoOutcome(ctx, scope, "k", nil, func(context.Context) (int, error) { return 6, nil })
	require.NoError(t, err)
	assert.Equal(t, 5, again.Value)
}

func TestCompleteRunsDetachedFromCancellation(t *testing.T) {
	scope := once.New(nil).Scope("s")
	ctx, cancel := context.WithCancel(context.Background())
	out, err := once.DoOutcome(ctx, scope, "k", nil, func(context.Context) (int, error) {
		cancel() // the caller gives up just as fn succeeds
		return 9, nil
	})
	require.NoError(t, err)
	assert.Equal(t, once.Recorded, out.Status)
	v, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (int, error) { return 0, nil })
	require.NoError(t, err)
	assert.Equal(t, 9, v)
}

func TestReleaseFailureReturnsFnErrorAndKeyRunsAfterLease(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	store := newFaultStore(memory.New(&memory.Config{Now: clock.Now}))
	store.set(func(f *faultStore) {
		f.release = func(context.Context, backends.ReleaseParams) (bool, error) { return false, errStoreDown }
	})
	scope := once.New(store, once.WithLease(30*time.Second)).Scope("s")
	errUpstream := errors.New("upstream 503")
	_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, errUpstream })
	assert.Equal(t, errUpstream, err, "fn's error, not the release failure")
	_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	assert.ErrorIs(t, err, once.ErrInProgress)
	clock.Advance(31 * time.Second)
	v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	require.NoError(t, err)
	assert.Equal(t, 1, v, "no key stuck past its lease")
}

func TestRoundTripsPerCall(t *testing.T) {
	ctx := context.Background()
	store := newFaultStore(memory.New(nil))
	scope := once.New(store).Scope("s")
	total := func() int {
		return store.Calls("claim") + store.Calls("complete") + store.Calls("renew") + store.Calls("release")
	}
	fn := func(context.Context) (int, error) { return 1, nil }

	_, err := once.Do(ctx, scope, "k", once.Fingerprint("a"), fn)
	require.NoError(t, err)
	assert.Equal(t, 2, total(), "first execution: claim + complete")

	_, err = once.Do(ctx, scope, "k", once.Fingerprint("a"), fn)
	require.NoError(t, err)
	assert.Equal(t, 3, total(), "replay: one claim")

	_, err = once.Do(ctx, scope, "k", once.Fingerprint("b"), fn)
	require.ErrorIs(t, err, once.ErrKeyReused)
	assert.Equal(t, 4, total(), "mismatch: one claim")
}
