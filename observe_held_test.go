package once_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
)

// TestObserverSeesResolve checks that an operator's Resolve is an event
// (Op "resolve", with the final error it stored), and that a Resolve
// refused (already completed) is not, on every store that lists held keys.
func TestObserverSeesResolve(t *testing.T) {
	for name, newStore := range testservers.ListerStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var rec recorder
			k := once.New(newStore(t), once.WithObserver(rec.observe), once.WithHoldFor(once.HoldUntilResolved))
			scope := k.Scope("s")
			held := errors.New("provider timeout")
			declined := errors.New("card declined")
			for _, key := range []string{"by-hand", "by-hand-declined"} {
				_, err := once.Do(ctx, scope, key, nil, func(context.Context) (int, error) { return 0, once.Hold(held) })
				require.ErrorIs(t, err, held)
			}
			rec.kinds()
			require.NoError(t, once.Resolve(ctx, scope, "by-hand", nil, 7, nil))
			require.ErrorIs(t, once.Resolve(ctx, scope, "by-hand", nil, 8, nil), once.ErrAlreadyCompleted)
			require.NoError(t, once.Resolve(ctx, scope, "by-hand-declined", nil, 0, once.Final(declined)))
			rec.mu.Lock()
			events := rec.events
			rec.mu.Unlock()
			require.Len(t, events, 2)
			assert.Equal(t, []string{"by-hand", "by-hand-declined"}, []string{events[0].Key, events[1].Key})
			for _, e := range events {
				assert.Equal(t, once.EventResolved, e.Kind)
				assert.Equal(t, "resolve", e.Op)
			}
			assert.NoError(t, events[0].FnErr)
			assert.Same(t, declined, events[1].FnErr, "the stored final error, without its class marker")
		})
	}
}

// TestResolveWhileAReconcilerAsks checks that a Resolve refused by a
// reconciler's live lease on a held key says so — in progress, held, for
// the lease left — instead of claiming the key was completed.
func TestResolveWhileAReconcilerAsks(t *testing.T) {
	for name, newStore := range testservers.ListerStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store := newStore(t)
			scope := once.New(store, once.WithHoldFor(once.HoldUntilResolved)).Scope("s")
			_, err := once.Do(ctx, scope, "k", once.Fingerprint("f"), func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
			require.Error(t, err)
			leased, err := store.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: "s", Key: "k", Owner: "reconciler-1", Lease: time.Minute})
			require.NoError(t, err)
			require.True(t, leased.Leased)

			err = once.Resolve(ctx, scope, "k", nil, 7, nil)
			var inProgress *once.InProgressError
			require.ErrorAs(t, err, &inProgress)
			assert.NotErrorIs(t, err, once.ErrAlreadyCompleted)
			assert.True(t, inProgress.Held)
			assert.Greater(t, inProgress.LeaseRemaining, time.Duration(0))
			assert.LessOrEqual(t, inProgress.LeaseRemaining, time.Minute)
			assert.ErrorIs(t, once.Resolve(ctx, scope, "k", once.Fingerprint("g"), 7, nil), once.ErrKeyReused)

			// The reconciler's own resolution is still its to make.
			res, err := store.Resolve(ctx, backends.ResolveParams{Scope: "s", Key: "k", Owner: "reconciler-1", Outcome: []byte("7"), Retention: time.Hour})
			require.NoError(t, err)
			assert.True(t, res.Resolved)
		})
	}
}

// failingResolveStore fails every Resolve.
type failingResolveStore struct{ backends.Store }

var errResolveDown = errors.New("store down")

func (failingResolveStore) Resolve(context.Context, backends.ResolveParams) (backends.ResolveResult, error) {
	return backends.ResolveResult{}, errResolveDown
}

func TestObserverSeesAFailedResolve(t *testing.T) {
	var rec recorder
	scope := once.New(failingResolveStore{memory.New(nil)}, once.WithObserver(rec.observe)).Scope("s")
	err := once.Resolve(context.Background(), scope, "k", nil, 1, nil)
	require.ErrorAs(t, err, new(*once.StoreError))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.events, 1)
	e := rec.events[0]
	assert.Equal(t, once.EventStoreError, e.Kind)
	assert.Equal(t, "resolve", e.Op)
	assert.ErrorIs(t, e.Err, errResolveDown)
}
