package reconcile_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/internal/testservers"
	"github.com/stagedoor/once/reconcile"
)

// TestObserverSeesEachKeyAsked checks that a pass reports each key it
// asked about to the Keeper's observers — resolved (Op "resolve", with the
// final error it stored) or reconciled (left held; Err the Check's
// failure) — on every store that lists held keys.
func TestObserverSeesEachKeyAsked(t *testing.T) {
	for name, newStore := range testservers.ListerStores() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			var rec recorder
			k := once.New(newStore(t), once.WithObserver(rec.observe), once.WithHoldFor(once.HoldUntilResolved))
			scope := k.Scope("s")
			held := errors.New("provider timeout")
			for _, key := range []string{"paid", "declined", "unknown", "lookup-fails"} {
				_, err := once.Do(ctx, scope, key, nil, func(context.Context) (int, error) { return 0, once.Hold(held) })
				require.ErrorIs(t, err, held)
			}
			rec.kinds()

			lookupErr := errors.New("provider down")
			declined := errors.New("card declined")
			r, err := reconcile.New(k, func(_ context.Context, h reconcile.HeldKey) (reconcile.Verdict[int], error) {
				switch h.Key {
				case "paid":
					return reconcile.Verdict[int]{Settled: true, Value: 42}, nil
				case "declined":
					return reconcile.Verdict[int]{Settled: true, Err: once.Final(declined)}, nil
				case "lookup-fails":
					return reconcile.Verdict[int]{}, lookupErr
				default:
					return reconcile.Verdict[int]{}, nil // unknown: not settled
				}
			}, reconcile.Config{})
			require.NoError(t, err)
			rep, err := r.Pass(ctx)
			require.NoError(t, err)
			require.Equal(t, 4, rep.Examined)
			require.Equal(t, 2, rep.Resolved)
			require.Equal(t, 2, rep.LeftHeld)
			require.Equal(t, 1, rep.Failed)

			rec.mu.Lock()
			byKey := map[string]once.Event{}
			for _, e := range rec.events {
				require.NotContains(t, byKey, e.Key, "one event per key asked about")
				byKey[e.Key] = e
			}
			rec.events = nil
			rec.mu.Unlock()
			require.Len(t, byKey, 4)
			for _, key := range []string{"paid", "declined"} {
				e := byKey[key]
				assert.Equal(t, once.EventResolved, e.Kind, key)
				assert.Equal(t, "resolve", e.Op, key)
				assert.Equal(t, "s", e.Scope, key)
			}
			assert.NoError(t, byKey["paid"].FnErr)
			assert.Same(t, declined, byKey["declined"].FnErr, "the stored final error, without its class marker, as for Resolve")
			assert.Equal(t, once.EventReconciled, byKey["unknown"].Kind)
			assert.NoError(t, byKey["unknown"].Err)
			assert.Equal(t, once.EventReconciled, byKey["lookup-fails"].Kind)
			assert.ErrorIs(t, byKey["lookup-fails"].Err, lookupErr)

		})
	}
}
