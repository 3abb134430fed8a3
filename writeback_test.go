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
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/memory"
)

// The owner keeps its lease through the whole write-back: with completion
// attempts that hang until their timeout, the write-back outlasts the lease,
// yet no duplicate ever takes the key over and runs fn a second time.
func TestRenewalCoversTheWriteBack(t *testing.T) {
	const lease = 1200 * time.Millisecond
	ctx := context.Background()
	inner := memory.New(nil)
	store := newFaultStore(inner)
	var attempts atomic.Int32
	store.complete = func(ctx context.Context, p backends.CompleteParams) (bool, error) {
		if attempts.Add(1) < 3 {
			<-ctx.Done() // a store that hangs until the attempt's timeout
			return false, ctx.Err()
		}
		return inner.Complete(ctx, p)
	}
	scope := once.New(store, once.WithLease(lease)).Scope("s")
	var runs atomic.Int32
	fn := func(context.Context) (string, error) { runs.Add(1); return "charged", nil }

	done := make(chan error, 1)
	start := time.Now()
	go func() { _, err := once.Do(ctx, scope, "k", nil, fn); done <- err }()
	var duplicates int
	for waiting := true; waiting; {
		select {
		case err := <-done:
			require.NoError(t, err)
			waiting = false
		case <-time.After(50 * time.Millisecond):
			_, err := once.Do(ctx, scope, "k", nil, fn)
			if !errors.Is(err, once.ErrInProgress) {
				require.NoError(t, err) // a replay once the outcome landed
			}
			duplicates++
		}
	}
	require.Greater(t, time.Since(start), lease, "the write-back outlasted one lease")
	assert.Equal(t, int32(3), attempts.Load())
	assert.Equal(t, int32(1), runs.Load(), "no takeover while the owner was completing")
	assert.Positive(t, duplicates)
	assert.Positive(t, store.Calls("renew"), "renewals went on between completion attempts")
	renewals := store.Calls("renew")
	backendtest.Elapse(t, inner, 2*lease)
	assert.Equal(t, renewals, store.Calls("renew"), "and stopped once the outcome was stored")
}
