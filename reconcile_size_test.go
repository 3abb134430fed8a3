package once_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

// TestReconcilerMaxOutcomeSize: a verdict over the Keeper's outcome cap is
// stored when ReconcilerConfig.MaxOutcomeSize allows it (a key whose
// callers store with a larger cap than the Keeper's is resolvable), and
// refused, the key left held, under the Keeper's cap; a negative one is
// refused by NewReconciler.
func TestReconcilerMaxOutcomeSize(t *testing.T) {
	const limit = 1 << 10
	big := strings.Repeat("x", 2*limit)
	check := func(context.Context, once.HeldKey) (once.Verdict[string], error) {
		return once.Verdict[string]{Settled: true, Value: big}, nil
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
			rc, err := once.NewReconciler(keeper, check, once.ReconcilerConfig{MaxOutcomeSize: tc.max})
			require.NoError(t, err)
			rep, err := rc.Pass(t.Context())
			require.NoError(t, err)
			if !tc.resolved {
				require.Equal(t, 1, rep.Failed)
				require.ErrorIs(t, rep.Errors[0], once.ErrOutcomeTooLarge)
				return
			}
			require.Equal(t, 1, rep.Resolved)
			v, err := once.Do(t.Context(), sc, "order-1", nil, func(context.Context) (string, error) { return "ran again", nil })
			require.NoError(t, err)
			require.Equal(t, big, v, "the verdict, replayed")
		})
	}
	_, err := once.NewReconciler(once.New(memory.New(nil)), check, once.ReconcilerConfig{MaxOutcomeSize: -1})
	var invalid *once.InvalidInputError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "reconciler_max_outcome_size", invalid.Field)
}
