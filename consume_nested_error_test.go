package once_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// completeFails is a store whose Complete always fails.
type completeFails struct{ backends.Store }

func (completeFails) Complete(context.Context, backends.CompleteParams) (bool, error) {
	return false, errors.New("store down")
}

// completeLost is a store whose Complete always finds another owner.
type completeLost struct{ backends.Store }

func (completeLost) Complete(context.Context, backends.CompleteParams) (bool, error) {
	return false, nil
}

// A handler whose own retryable error wraps ErrOutcomeUnrecorded or
// ErrLeaseLost (from a nested Do whose completion failed) is a handler
// error: nothing of the message's outcome is stored, so the message must be
// delivered again, not acknowledged as unrecorded.
func TestConsumeHandlerErrorWrappingNestedFailureIsRetried(t *testing.T) {
	nested := map[string]backends.Store{
		"unrecorded": completeFails{memory.New(nil)},
		"lease lost": completeLost{memory.New(nil)},
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
			d := once.Consume(ctx, outer, "m1", nil, handler)
			require.Equal(t, once.RetryLater, d.Action, "decision %v (err %v)", d, d.Err)
			require.Equal(t, once.ReasonHandlerError, d.Reason)

			d = once.Consume(ctx, outer, "m1", nil, handler)
			require.Equal(t, once.ReasonHandlerError, d.Reason, "the claim was released: the redelivery runs the handler again")
			require.EqualValues(t, 2, runs.Load())
		})
	}
}

// The core's own failures are still told apart: an outcome the store
// failed to record is acknowledged, a completion that lost the lease is
// retried.
func TestConsumeCoreCompletionFailures(t *testing.T) {
	ctx := context.Background()
	ok := func(context.Context) error { return nil }

	d := once.Consume(ctx, once.New(completeFails{memory.New(nil)}).Scope("group"), "m1", nil, ok)
	require.Equal(t, once.Ack, d.Action, "decision %v", d)
	require.Equal(t, once.ReasonUnrecorded, d.Reason)
	require.ErrorIs(t, d.Err, once.ErrOutcomeUnrecorded)

	d = once.Consume(ctx, once.New(completeLost{memory.New(nil)}).Scope("group"), "m1", nil, ok)
	require.Equal(t, once.RetryLater, d.Action, "decision %v", d)
	require.Equal(t, once.ReasonLeaseLost, d.Reason)
	require.ErrorIs(t, d.Err, once.ErrLeaseLost)
}

// DoOutcome reports in Outcome.Status how each call ended: the core's own
// completion failures included, and a held key.
func TestDoOutcomeReportsHowTheCallEnded(t *testing.T) {
	ctx := context.Background()
	one := func(context.Context) (int, error) { return 1, nil }

	out, err := once.DoOutcome(ctx, once.New(completeFails{memory.New(nil)}).Scope("s"), "k", nil, one)
	require.ErrorIs(t, err, once.ErrOutcomeUnrecorded)
	require.Equal(t, once.Unrecorded, out.Status)

	out, err = once.DoOutcome(ctx, once.New(completeLost{memory.New(nil)}).Scope("s"), "k", nil, one)
	require.ErrorIs(t, err, once.ErrLeaseLost)
	require.Equal(t, once.LeaseLost, out.Status)

	scope := once.New(memory.New(nil)).Scope("s")
	out, err = once.DoOutcome(ctx, scope, "k", nil, one)
	require.NoError(t, err)
	require.Equal(t, once.Recorded, out.Status)

	out, err = once.DoOutcome(ctx, scope, "k", nil, one)
	require.NoError(t, err)
	require.Equal(t, once.Replayed, out.Status)

	out, err = once.DoOutcome(ctx, scope, "held", nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
	require.Error(t, err)
	require.Equal(t, once.Held, out.Status)

	out, err = once.DoOutcome(ctx, scope, "held", nil, one)
	require.ErrorIs(t, err, once.ErrInProgress)
	require.Zero(t, out.Status, "fn did not run")
	require.Equal(t, "not run", out.Status.String())

	out, err = once.DoOutcome(ctx, scope, "released", nil, func(context.Context) (int, error) { return 0, errors.New("retry me") })
	require.Error(t, err)
	require.Equal(t, once.Released, out.Status)
}
