package consume_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/consume"
)

// A handler whose own retryable error wraps ErrOutcomeUnrecorded or
// ErrLeaseLost (from a nested Do whose completion failed) is a handler
// error: nothing of the message's outcome is stored, so the message must be
// delivered again, not acknowledged as unrecorded.
func TestHandlerErrorWrappingNestedFailureIsRetried(t *testing.T) {
	nested := map[string]backends.Store{
		"unrecorded": &faults{Store: memory.New(nil), completeErr: errStoreDown},
		"lease lost": &faults{Store: memory.New(nil), completeLost: true},
	}
	for name, store := range nested {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			outer := once.New(memory.New(nil)).Scope("group")
			inner := once.New(store).Scope("sub")
			var runs atomic.Int32
			handler := func(ctx context.Context) error {
				runs.Add(1)
				_, err := once.Do(ctx, inner, "step-1", nil, func(context.Context) (int, error) { return 1, nil })
				require.Error(t, err)
				return errors.Join(errors.New("step 1 failed, retry the message"), err)
			}
			d := consume.Do(ctx, outer, "m1", nil, handler)
			require.Equal(t, consume.RetryLater, d.Action, "decision %v (err %v)", d, d.Err)
			require.Equal(t, consume.ReasonHandlerError, d.Reason)

			d = consume.Do(ctx, outer, "m1", nil, handler)
			require.Equal(t, consume.ReasonHandlerError, d.Reason, "the claim was released: the redelivery runs the handler again")
			require.EqualValues(t, 2, runs.Load())
		})
	}
}

// The core's own failures are still told apart: an outcome the store
// failed to record is acknowledged, a completion that lost the lease is
// retried, and a Hold the store failed to write is ReasonHeld (the
// outcome is unknown: acknowledging could lose the message) with
// ErrOutcomeUnrecorded in Err.
func TestCoreCompletionFailures(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }

	d := consume.Do(ctx, once.New(&faults{Store: memory.New(nil), completeErr: errStoreDown}).Scope("group"), "m1", nil, ok)
	require.Equal(t, consume.Ack, d.Action, "decision %v", d)
	require.Equal(t, consume.ReasonUnrecorded, d.Reason)
	require.ErrorIs(t, d.Err, once.ErrOutcomeUnrecorded)

	d = consume.Do(ctx, once.New(&faults{Store: memory.New(nil), completeLost: true}).Scope("group"), "m1", nil, ok)
	require.Equal(t, consume.RetryLater, d.Action, "decision %v", d)
	require.Equal(t, consume.ReasonLeaseLost, d.Reason)
	require.ErrorIs(t, d.Err, once.ErrLeaseLost)

	timeout := errors.New("provider timed out")
	d = consume.Do(ctx, once.New(&faults{Store: memory.New(nil), holdErr: errStoreDown}).Scope("group"), "m1", nil,
		func(context.Context) error { return once.Hold(timeout) })
	require.Equal(t, consume.RetryLater, d.Action, "decision %v", d)
	require.Equal(t, consume.ReasonHeld, d.Reason)
	require.ErrorIs(t, d.Err, once.ErrOutcomeUnrecorded)
	require.ErrorIs(t, d.Err, timeout)
}
