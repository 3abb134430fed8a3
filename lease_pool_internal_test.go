package once

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// firedTimer is a timer that has fired, its function not yet run: Stop
// cannot cancel it, as a time.Timer whose AfterFunc goroutine is starting.
type firedTimer struct{ f func() }

func (*firedTimer) Stop() bool               { return false }
func (*firedTimer) Reset(time.Duration) bool { return false }

// renewCounter counts the renewals sent.
type renewCounter struct {
	backends.Store
	renewals atomic.Int64
}

func (s *renewCounter) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	s.renewals.Add(1)
	return s.Store.Renew(ctx, p)
}

// TestRenewerWithAPendingFireIsNotReused: a renewer stopped while its
// timer's fire was on its way is not pooled (the next claim gets another
// renewer), and that late fire sends nothing and reports no lease loss.
func TestRenewerWithAPendingFireIsNotReused(t *testing.T) {
	var fired *firedTimer
	prev := clock.Load()
	clock.Store(&clockFuncs{
		now: time.Now,
		afterFunc: func(_ time.Duration, f func()) timer {
			fired = &firedTimer{f: f}
			return fired
		},
	})
	t.Cleanup(func() { clock.Store(prev) })

	store := &renewCounter{Store: memory.New(nil)}
	cfg := defaultConfig()
	var lost atomic.Int64
	p := backends.RenewParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute}
	r := startRenewer(context.Background(), store, &cfg, p, time.Now(), lostFunc(func(error) { lost.Add(1) }))
	late := fired.f
	r.stop()
	r.recycle()

	for range 8 { // a pooled r would come back (the race detector's pool drops some Puts)
		next := startRenewer(context.Background(), store, &cfg, p, time.Now(), lostFunc(func(error) {}))
		require.NotSame(t, r, next, "a renewer whose fire is pending is left to the garbage collector")
		next.stop()
	}
	late()
	require.Zero(t, store.renewals.Load(), "the late fire finds its renewer stopped: no renewal")
	require.Zero(t, lost.Load())
}
