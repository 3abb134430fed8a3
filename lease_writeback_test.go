package once_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// TestBlockingRenewalObserverNeverHoldsTheWriteBack: a renewal event
// blocking in the observer when fn returns holds back neither the write
// of fn's outcome nor Do's return. The write waited for the observer to
// see every renewal event; with the renewal lock held, renewals stopped,
// the watchdog reported the lease lost, and a duplicate took the key over
// and ran fn again; without it, the write still waited for as long as the
// observer blocked (a slow observer that never caught up with the
// renewals kept Do from returning at all).
func TestBlockingRenewalObserverNeverHoldsTheWriteBack(t *testing.T) {
	ctx := context.Background()
	const lease = 60 * time.Millisecond
	unblock, blocking := make(chan struct{}), make(chan struct{})
	var blockOnce sync.Once
	obs := func(_ context.Context, e once.Event) {
		if e.Kind == once.EventRenewed {
			blockOnce.Do(func() { close(blocking); <-unblock })
		}
	}
	inner := memory.New(nil)
	store := newFaultStore(inner)
	scope := once.New(store, once.WithLease(lease), once.WithObserver(obs)).Scope("s")
	type res struct {
		out once.Outcome[int]
		err error
	}
	done := make(chan res, 1)
	go func() {
		out, err := once.DoOutcome(ctx, scope, "k", nil, func(context.Context) (int, error) {
			<-blocking // the first renewal's event is in the observer
			return 1, nil
		})
		done <- res{out, err}
	}()
	<-blocking
	var ran atomic.Int32
	dup, err := once.DoOutcome(ctx, once.New(inner, once.WithLease(lease), once.WithWait(time.Minute)).Scope("s"), "k", nil, func(context.Context) (int, error) {
		ran.Add(1)
		return 2, nil
	})
	if dup.Status != once.Replayed {
		close(unblock) // the first Do waits for the observer
		t.Fatalf("the duplicate got %+v, %v (fn ran again %d times), not the stored outcome", dup, err, ran.Load())
	}
	r := <-done // the observer still blocks: unblock is closed below
	close(unblock)
	require.NoError(t, err)
	assert.Equal(t, 1, dup.Value)
	assert.Zero(t, ran.Load(), "fn ran again for a key whose first fn succeeded")
	require.NoError(t, r.err)
	assert.Equal(t, once.Recorded, r.out.Status)
}

// TestWatchdogDuringAnAppliedCompleteReportsNoLeaseLost: the watchdog
// firing while a Complete attempt is in flight (a renewal failed, and the
// write's one-interval floor runs past the watchdog's deadline) only stops
// renewal. It used to tell the observer EventLeaseLost for a claim whose
// Complete then applied (Do answered Recorded), although renewal events
// all come before the outcome is written.
func TestWatchdogDuringAnAppliedCompleteReportsNoLeaseLost(t *testing.T) {
	ctx := context.Background()
	const lease = 60 * time.Millisecond
	var mu sync.Mutex
	var kinds []once.EventKind
	obs := func(_ context.Context, e once.Event) {
		mu.Lock()
		kinds = append(kinds, e.Kind)
		mu.Unlock()
	}
	inner := memory.New(nil)
	store := newFaultStore(inner)
	store.set(func(f *faultStore) {
		f.renew = func(context.Context, backends.RenewParams) (bool, error) { return false, errors.New("renew down") }
		f.complete = func(ctx context.Context, p backends.CompleteParams) (bool, error) {
			time.Sleep(lease / 2) // a slow driver that does not honour its context
			return inner.Complete(context.WithoutCancel(ctx), p)
		}
	})
	scope := once.New(store, once.WithLease(lease), once.WithObserver(obs)).Scope("s")
	out, err := once.DoOutcome(ctx, scope, "k", nil, func(context.Context) (int, error) {
		time.Sleep(lease / 2) // past the first (failed) renewal
		return 1, nil
	})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	t.Logf("outcome %+v, events %v", out, kinds)
	assert.Equal(t, once.Recorded, out.Status)
	assert.NotContains(t, kinds, once.EventLeaseLost, "a recorded claim reported lost to the observer")
}
