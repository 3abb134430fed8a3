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

// TestBlockingObserverDuringWriteBackNeverStopsRenewals: a renewal event
// blocking in the observer while fn's outcome is written back delays the
// write, never the renewals. The write waited for the event queue holding
// the renewer's flight lock, so renewals stopped, the watchdog reported the
// lease lost, and a duplicate took the key over and ran fn a second time
// although the first fn had succeeded.
func TestBlockingObserverDuringWriteBackNeverStopsRenewals(t *testing.T) {
	ctx := context.Background()
	const lease = 60 * time.Millisecond
	unblock, blocking := make(chan struct{}), make(chan struct{})
	var blockOnce sync.Once
	var kinds []once.EventKind
	var mu sync.Mutex
	obs := func(_ context.Context, e once.Event) {
		mu.Lock()
		kinds = append(kinds, e.Kind)
		mu.Unlock()
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
	time.Sleep(4 * lease)
	renewals := store.Calls("renew")
	var ran atomic.Int32
	_, err := once.Do(ctx, once.New(inner, once.WithLease(lease)).Scope("s"), "k", nil, func(context.Context) (int, error) {
		ran.Add(1)
		return 2, nil
	})
	close(unblock)
	r := <-done
	t.Logf("renewals %d, first: %+v %v, duplicate err %v, events %v", renewals, r.out, r.err, err, kinds)
	assert.GreaterOrEqual(t, renewals, 3, "renewals go on while the observer blocks")
	assert.Zero(t, ran.Load(), "fn ran again for a key whose first fn succeeded")
	require.NoError(t, r.err)
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
	assert.True(t, out.Recorded)
	assert.NotContains(t, kinds, once.EventLeaseLost, "a recorded claim reported lost to the observer")
}
