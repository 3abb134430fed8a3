package reconcile_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/reconcile"
)

// TestReconcilerMaxOutcomeSize: a verdict over the Keeper's outcome cap is
// stored when Config.MaxOutcomeSize allows it (a key whose
// callers store with a larger cap than the Keeper's is resolvable), and
// refused, the key left held, under the Keeper's cap; a negative one is
// refused by NewReconciler.
func TestReconcilerMaxOutcomeSize(t *testing.T) {
	const limit = 1 << 10
	big := strings.Repeat("x", 2*limit)
	check := func(context.Context, reconcile.HeldKey) (reconcile.Verdict[string], error) {
		return reconcile.Verdict[string]{Settled: true, Value: big}, nil
	}
	for _, tc := range []struct {
		name     string
		max      int
		resolved bool
	}{
		{"the Keeper's cap", 0, false},
		{"a larger cap", 4 * limit, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keeper := once.New(memory.New(nil), once.WithHoldFor(once.HoldUntilResolved), once.WithMaxOutcomeSize(limit))
			sc := keeper.Scope("shop")
			holdOne(t, sc, "order-1", nil)
			rc, err := reconcile.New(keeper, check, reconcile.Config{MaxOutcomeSize: tc.max})
			require.NoError(t, err)
			rep, err := rc.Pass(t.Context())
			require.NoError(t, err)
			if !tc.resolved {
				require.Equal(t, 1, rep.Failed)
				require.ErrorAs(t, rep.Errors[0], new(*once.OutcomeTooLargeError))
				return
			}
			require.Equal(t, 1, rep.Resolved)
			v, err := once.Do(t.Context(), sc, "order-1", nil, func(context.Context) (string, error) { return "ran again", nil })
			require.NoError(t, err)
			require.Equal(t, big, v, "the verdict, replayed")
		})
	}
	_, err := reconcile.New(once.New(memory.New(nil)), check, reconcile.Config{MaxOutcomeSize: -1})
	var invalid *once.InvalidInputError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "reconciler_max_outcome_size", invalid.Field)
}
