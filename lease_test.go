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

func TestLongFnKeepsOwnershipThroughRenewal(t *testing.T) {
	ctx := context.Background()
	store := newFaultStore(memory.New(nil))
	// The lease leaves a renewal, sent every third of it, a second of
	// slack: on a loaded CI machine a 300 ms wait took 800 ms.
	scope := once.New(store, once.WithLease(1500*time.Millisecond)).Scope("s")
	done := make(chan error, 1)
	started, finish := make(chan struct{}), make(chan struct{})
	go func() {
		_, err := once.Do(ctx, scope, "k", nil, func(ctx context.Context) (string, error) {
			close(started)
			select {
			case <-finish: // after the duplicates: more than two and a half leases
				return "finished", nil
			case <-ctx.Done():
				return "", context.Cause(ctx)
			}
		})
		done <- err
	}()
	<-started
	var duplicateRuns atomic.Int32
	for range 10 {
		time.Sleep(400 * time.Millisecond) // 4 s in all, longer on a slow machine
		_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) {
			duplicateRuns.Add(1)
			return "duplicate", nil
		})
		assert.ErrorIs(t, err, once.ErrInProgress)
	}
	close(finish)
	require.NoError(t, <-done, "fn's context must not be cancelled while renewals succeed")
	assert.Zero(t, duplicateRuns.Load())
	assert.GreaterOrEqual(t, store.Calls("renew"), 4)
	v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) { return "again", nil })
	require.NoError(t, err)
	assert.Equal(t, "finished", v)
}

// A stale owner — paused past its lease (as by SIGSTOP), so its renewals
// never reach the store — wakes after another caller took the key over and
// completed it. Its completion is refused: ErrLeaseLost, nothing overwritten.
func TestStaleOwnerGetsLeaseLostAndOverwritesNothing(t *testing.T) {
	ctx := context.Background()
	store := newFaultStore(memory.New(nil))
	paused := errors.New("process paused")
	store.set(func(f *faultStore) {
		f.renew = func(context.Context, backends.RenewParams) (bool, error) { return false, paused }
	})
	scope := once.New(store, once.WithLease(100*time.Millisecond)).Scope("s")

	started, resume := make(chan struct{}), make(chan struct{})
	type result struct {
		v     string
		err   error
		cause error
	}
	staleDone := make(chan result, 1)
	go func() {
		var cause error
		v, err := once.Do(ctx, scope, "k", nil, func(ctx context.Context) (string, error) {
			close(started)
			<-resume // paused; ignores its context like a stopped process
			cause = context.Cause(ctx)
			return "stale", nil
		})
		staleDone <- result{v, err, cause}
	}()
	<-started
	time.Sleep(250 * time.Millisecond) // past the lease

	store.set(func(f *faultStore) { f.renew = nil })
	fresh, err := once.DoOutcome(ctx, scope, "k", nil, func(context.Context) (string, error) { return "fresh", nil })
	require.NoError(t, err)
	require.False(t, fresh.Replayed, "the expired claim was taken over")

	close(resume)
	stale := <-staleDone
	assert.ErrorIs(t, stale.err, once.ErrLeaseLost)
	assert.ErrorIs(t, stale.cause, once.ErrLeaseLost, "fn's context was cancelled when ownership could not be proven")

	v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (string, error) { return "third", nil })
	require.NoError(t, err)
	assert.Equal(t, "fresh", v, "the stale owner overwrote nothing")
}

func TestRenewReportingLostCancelsFn(t *testing.T) {
	ctx := context.Background()
	store := newFaultStore(memory.New(nil))
	store.set(func(f *faultStore) {
		f.renew = func(context.Context, backends.RenewParams) (bool, error) { return false, nil }
	})
	scope := once.New(store, once.WithLease(60*time.Millisecond)).Scope("s")
	_, err := once.Do(ctx, scope, "k", nil, func(ctx context.Context) (string, error) {
		<-ctx.Done()
		return "", ctx.Err()
	})
	assert.ErrorIs(t, err, once.ErrLeaseLost)
	assert.ErrorIs(t, err, context.Canceled, "fn's own error comes back too")
}

func TestCrashedOwnerIsTakenOverAfterLease(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	mem := memory.New(&memory.Config{Now: clock.Now})
	// A claim whose owner died: made directly in the store, never completed.
	_, err := mem.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "dead", Lease: 30 * time.Second, Retention: time.Hour})
	require.NoError(t, err)
	scope := once.New(mem).Scope("s")
	_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	require.ErrorIs(t, err, once.ErrInProgress)
	clock.Advance(31 * time.Second)
	v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 2, nil })
	require.NoError(t, err)
	assert.Equal(t, 2, v)
	ok, err := mem.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "k", Owner: "dead", Outcome: []byte("x"), Retention: time.Hour})
	require.NoError(t, err)
	assert.False(t, ok, "the dead owner's token is fenced off")
}
