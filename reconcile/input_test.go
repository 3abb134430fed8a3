package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/reconcile"
)

// TestReconcilerNilContextIsAnError: Pass and Run refuse a nil context
// with the *InvalidInputError (Field "ctx") that Do and Resolve return,
// before any store call: the held key is neither asked about nor leased.
// On main Pass panicked (a nil pointer dereference in the store's List)
// and so did Run.
func TestReconcilerNilContextIsAnError(t *testing.T) {
	store := memory.New(nil)
	keeper := once.New(store, once.WithHoldFor(once.HoldUntilResolved))
	holdOne(t, keeper.Scope("s"), "k", nil)
	asked := 0
	rc, err := reconcile.New(keeper, func(context.Context, reconcile.HeldKey) (reconcile.Verdict[int], error) {
		asked++
		return reconcile.Verdict[int]{Settled: true, Value: 1}, nil
	}, reconcile.Config{})
	require.NoError(t, err)

	var nilCtx context.Context
	var invalid *once.InvalidInputError
	rep, err := rc.Pass(nilCtx)
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "ctx", invalid.Field)
	require.Equal(t, reconcile.Report{}, rep)
	require.ErrorAs(t, rc.Run(nilCtx, time.Millisecond), &invalid)
	require.Equal(t, "ctx", invalid.Field)

	_, doErr := once.Do(nilCtx, keeper.Scope("s"), "k", nil, func(context.Context) (int, error) { return 1, nil })
	require.ErrorAs(t, doErr, &invalid)
	require.Equal(t, "ctx", invalid.Field, "as Do")
	require.Zero(t, asked)
	rec, err := store.Get(t.Context(), "s", "k")
	require.NoError(t, err)
	require.Equal(t, backends.StateHeld, rec.State)
	require.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0), "not leased")
}
