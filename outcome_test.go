package once_test

import (
	"context"
	"errors"
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
