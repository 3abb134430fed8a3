package once_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// holdOne makes (scope, key) held with fingerprint fp through Do.
func holdOne(t *testing.T, sc once.Scope, key string, fp once.Fingerprint) {
	t.Helper()
	_, err := once.Do(t.Context(), sc, key, fp, func(context.Context) (string, error) {
		return "", once.Hold(errors.New("provider timeout"))
	})
	require.Error(t, err)
}

// notAnAnswer are the ways a caller marks an error as no answer: with Hold
// or Retry, directly or further down the chain.
var notAnAnswer = []struct {
	name string
	wrap func(error) error
}{
	{"hold", once.Hold},
	{"retry", once.Retry},
	{"wrapped-hold", func(err error) error { return fmt.Errorf("lookup: %w", once.Hold(err)) }},
	{"wrapped-retry", func(err error) error { return fmt.Errorf("lookup: %w", once.Retry(err)) }},
}

// TestReconcilerNeverStoresAHeldOrRetryableVerdict: a settled Verdict
// whose Err is marked with Hold or Retry (a lookup that wrapped its own
// failure with the helper fn uses) is no answer, so the Reconciler leaves
// the key held and counts it Failed with an *InvalidInputError; on main it
// stored the error as the key's final answer, replayed to every retry for
// the retention.
func TestReconcilerNeverStoresAHeldOrRetryableVerdict(t *testing.T) {
	for _, mark := range notAnAnswer {
		t.Run(mark.name, func(t *testing.T) {
			store := memory.New(nil)
			keeper := once.New(store, once.WithHoldFor(once.HoldUntilResolved))
			sc := keeper.Scope("shop")
			holdOne(t, sc, "order-1", once.Fingerprint("A"))
			rc, err := once.NewReconciler(keeper, func(ctx context.Context, k once.HeldKey) (once.Verdict[string], error) {
				return once.Verdict[string]{Settled: true, Err: mark.wrap(errors.New("lookup timed out"))}, nil
			}, once.ReconcilerConfig{})
			require.NoError(t, err)
			rep, err := rc.Pass(t.Context())
			require.NoError(t, err)
			require.Zero(t, rep.Resolved, "a %s-marked verdict was stored as the key's final answer", mark.name)
			require.Equal(t, 1, rep.Failed)
			require.Equal(t, 1, rep.LeftHeld)
			require.Len(t, rep.Errors, 1)
			var inv *once.InvalidInputError
			require.ErrorAs(t, rep.Errors[0], &inv)
			require.Equal(t, "err", inv.Field)
			rec, _, found, err := store.Get(t.Context(), "shop", "order-1")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, backends.StateHeld, rec.State)
			require.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0), "the key is left leased")
		})
	}
}

// TestResolveRefusesAHeldOrRetryableError: once.Resolve refuses an error
// marked with Hold or Retry with an *InvalidInputError, before any store
// call, and leaves the key held; an unmarked error and one marked Final
// (even around a Hold) are stored as the final answer.
func TestResolveRefusesAHeldOrRetryableError(t *testing.T) {
	for _, mark := range notAnAnswer {
		t.Run(mark.name, func(t *testing.T) {
			store := memory.New(nil)
			sc := once.New(store, once.WithHoldFor(once.HoldUntilResolved)).Scope("shop")
			holdOne(t, sc, "order-1", nil)
			err := once.Resolve(t.Context(), sc, "order-1", nil, "", mark.wrap(errors.New("lookup timed out")))
			var inv *once.InvalidInputError
			require.ErrorAs(t, err, &inv)
			require.Equal(t, "err", inv.Field)
			require.ErrorIs(t, err, once.ErrInvalidInput)
			rec, _, found, err := store.Get(t.Context(), "shop", "order-1")
			require.NoError(t, err)
			require.True(t, found)
			require.Equal(t, backends.StateHeld, rec.State)
		})
	}
	for name, answer := range map[string]error{
		"unmarked":        errors.New("card declined"),
		"final":           once.Final(errors.New("card declined")),
		"final-over-hold": once.Final(once.Hold(errors.New("card declined"))),
	} {
		t.Run(name, func(t *testing.T) {
			sc := once.New(memory.New(nil), once.WithHoldFor(once.HoldUntilResolved)).Scope("shop")
			holdOne(t, sc, "order-1", nil)
			require.NoError(t, once.Resolve(t.Context(), sc, "order-1", nil, "", answer))
			_, err := once.Do(t.Context(), sc, "order-1", nil, func(context.Context) (string, error) { return "ran", nil })
			require.EqualError(t, err, "card declined")
		})
	}
}
