package once_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

type recorder struct {
	mu     sync.Mutex
	events []once.Event
}

func (r *recorder) observe(_ context.Context, e once.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) kinds() []once.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	kinds := make([]once.EventKind, len(r.events))
	for i, e := range r.events {
		kinds[i] = e.Kind
	}
	r.events = nil
	return kinds
}

// saw reports whether an event of kind was observed since kinds last
// returned.
func (r *recorder) saw(kind once.EventKind) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

func TestObserverSeesEveryOutcome(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	scope := once.New(nil, once.WithObserver(rec.observe)).Scope("s")
	ok := func(context.Context) (int, error) { return 1, nil }

	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("a"), ok)
	assert.Equal(t, []once.EventKind{once.EventClaimed, once.EventExecuted, once.EventRecorded}, rec.kinds())
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("a"), ok)
	assert.Equal(t, []once.EventKind{once.EventReplayed}, rec.kinds())
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("b"), ok)
	assert.Equal(t, []once.EventKind{once.EventKeyReused}, rec.kinds())

	_, _ = once.Do(ctx, scope, "retry", nil, func(context.Context) (int, error) { return 0, errors.New("503") })
	assert.Equal(t, []once.EventKind{once.EventClaimed, once.EventExecuted, once.EventReleased}, rec.kinds())

	_, _ = once.Do(ctx, scope, "held", nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
	assert.Equal(t, []once.EventKind{once.EventClaimed, once.EventExecuted, once.EventHeld}, rec.kinds())
	_, _ = once.Do(ctx, scope, "held", nil, ok)
	assert.Equal(t, []once.EventKind{once.EventInProgress}, rec.kinds())
}

func TestObserverSeesDurationsClassesAndStoreErrors(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	store := newFaultStore(memory.New(nil))
	scope := once.New(store, once.WithObserver(rec.observe)).Scope("s")
	_, _ = once.Do(ctx, scope, "final", nil, func(context.Context) (int, error) {
		time.Sleep(5 * time.Millisecond)
		return 0, once.Final(errors.New("declined"))
	})
	rec.mu.Lock()
	executed := rec.events[1]
	rec.mu.Unlock()
	assert.Equal(t, once.EventExecuted, executed.Kind)
	assert.Equal(t, once.ClassFinal, executed.Class)
	assert.GreaterOrEqual(t, executed.FnTime, 5*time.Millisecond)
	assert.Zero(t, executed.StoreTime)
	assert.Empty(t, executed.Op)
	assert.EqualError(t, executed.FnErr, "declined", "fn's error, without its marker")
	assert.NoError(t, executed.Err, "Err is never fn's error")
	assert.Equal(t, "s", executed.Scope)
	assert.Equal(t, "final", executed.Key)
	rec.kinds()

	store.set(func(f *faultStore) {
		f.claim = func(context.Context, backends.ClaimParams) (backends.ClaimResult, error) {
			return backends.ClaimResult{}, errStoreDown
		}
	})
	_, _ = once.Do(ctx, scope, "down", nil, func(context.Context) (int, error) { return 1, nil })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.events, 1)
	assert.Equal(t, once.EventStoreError, rec.events[0].Kind)
	assert.Equal(t, "claim", rec.events[0].Op)
	assert.ErrorIs(t, rec.events[0].Err, errStoreDown)
}

func TestObserverSeesRenewalsAndLeaseLoss(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	store := newFaultStore(memory.New(nil))
	// panicLease leaves a renewal timer that fires late on a loaded
	// machine time to renew before the watchdog's deadline.
	scope := once.New(store, once.WithObserver(rec.observe), once.WithLease(panicLease)).Scope("s")
	// fn runs until the observer has seen what it waits for: renewal
	// events that the renewer has not handed to the observer when fn's
	// outcome is written are dropped.
	_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) {
		eventually(t, func() bool { return rec.saw(once.EventRenewed) }, "no renewal reached the observer while fn ran")
		return 1, nil
	})
	require.NoError(t, err)
	assert.NotContains(t, rec.kinds(), once.EventLeaseLost)

	store.set(func(f *faultStore) {
		f.renew = func(context.Context, backends.RenewParams) (bool, error) { return false, nil }
	})
	_, err = once.Do(ctx, scope, "k2", nil, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		eventually(t, func() bool { return rec.saw(once.EventLeaseLost) }, "the lease loss that cancelled fn never reached the observer")
		return 0, ctx.Err()
	})
	require.ErrorIs(t, err, once.ErrLeaseLost)
	assert.NotContains(t, rec.kinds(), once.EventRenewed, "a refused renewal is no renewal")
}

// Every event names the store operation it reports on, and only those
// without one (executed) leave Op empty; held names "hold" on a store
// that keeps the held state.
func TestEveryStoreEventNamesItsOp(t *testing.T) {
	ctx := context.Background()
	var rec recorder
	scope := once.New(nil, once.WithObserver(rec.observe)).Scope("s")
	ok := func(context.Context) (int, error) { return 1, nil }
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("a"), ok)
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("a"), ok)
	_, _ = once.Do(ctx, scope, "k", once.Fingerprint("b"), ok)
	_, _ = once.Do(ctx, scope, "r", nil, func(context.Context) (int, error) { return 0, errors.New("503") })
	_, _ = once.Do(ctx, scope, "h", nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("t")) })
	want := map[once.EventKind]string{
		once.EventClaimed: "claim", once.EventReplayed: "claim", once.EventKeyReused: "claim",
		once.EventRecorded: "complete", once.EventReleased: "release", once.EventExecuted: "", once.EventHeld: "hold",
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	seen := map[once.EventKind]bool{}
	for _, e := range rec.events {
		op, ok := want[e.Kind]
		require.True(t, ok, "unexpected %v", e.Kind)
		assert.Equal(t, op, e.Op, "%v", e.Kind)
		seen[e.Kind] = true
		if e.Kind == once.EventHeld {
			assert.Equal(t, once.ClassHold, e.Class)
			assert.EqualError(t, e.FnErr, "t")
		}
	}
	assert.Len(t, seen, len(want))
}
