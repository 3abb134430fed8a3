package once_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/testservers"
)

// TestSemanticsOnEveryStore runs the core's promises on every backend over
// the real servers: one run for 64 concurrent duplicates, typed replay of a
// final error, a held key, and a stale owner fenced off.
func TestSemanticsOnEveryStore(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			t.Run("ConcurrentDuplicates", func(t *testing.T) {
				runs, values, errs := hammer(t, once.New(newStore(t)).Scope("s"), 64)
				assert.Equal(t, int32(1), runs)
				for i := range values {
					if errs[i] != nil {
						assert.ErrorIs(t, errs[i], once.ErrInProgress)
					}
				}
			})
			t.Run("ConcurrentDuplicatesWait", func(t *testing.T) {
				runs, values, errs := hammer(t, once.New(newStore(t), once.WithWait(20*time.Second)).Scope("s"), 64)
				assert.Equal(t, int32(1), runs)
				for i := range values {
					require.NoError(t, errs[i])
					assert.Equal(t, "charged", values[i])
				}
			})
			t.Run("FinalErrorReplay", func(t *testing.T) {
				scope := once.New(newStore(t), once.RegisterError[*CardDeclinedError]("card_declined")).Scope("s")
				fn := func(context.Context) (int, error) { return 0, once.Final(&CardDeclinedError{Reason: "lost_card"}) }
				_, _ = once.Do(context.Background(), scope, "k", nil, fn)
				out, err := once.DoOutcome(context.Background(), scope, "k", nil, fn)
				var declined *CardDeclinedError
				require.ErrorAs(t, err, &declined)
				assert.Equal(t, "lost_card", declined.Reason)
				assert.Equal(t, once.Replayed, out.Status)
			})
			t.Run("HeldThenRerun", func(t *testing.T) {
				store := newStore(t)
				scope := once.New(store, once.WithLease(300*time.Millisecond)).Scope("s")
				ctx := context.Background()
				_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
				require.Error(t, err)
				_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
				assert.ErrorIs(t, err, once.ErrInProgress)
				backendtest.Elapse(t, store, 300*time.Millisecond) // past the hold, by the store's clock
				v, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 2, nil })
				require.NoError(t, err)
				assert.Equal(t, 2, v)
			})
			t.Run("StaleOwnerFenced", func(t *testing.T) {
				inner := newStore(t)
				store := newFaultStore(inner)
				store.set(func(f *faultStore) {
					f.renew = func(context.Context, backends.RenewParams) (bool, error) { return false, errors.New("paused") }
				})
				scope := once.New(store, once.WithLease(200*time.Millisecond)).Scope("s")
				started, resume := make(chan struct{}), make(chan struct{})
				staleErr := make(chan error, 1)
				go func() {
					_, err := once.Do(context.Background(), scope, "k", nil, func(context.Context) (string, error) {
						close(started)
						<-resume
						return "stale", nil
					})
					staleErr <- err
				}()
				<-started
				backendtest.Elapse(t, inner, 200*time.Millisecond) // past the unrenewed lease
				v, err := once.Do(context.Background(), once.New(inner).Scope("s"), "k", nil,
					func(context.Context) (string, error) { return "fresh", nil })
				require.NoError(t, err)
				require.Equal(t, "fresh", v)
				close(resume)
				assert.ErrorIs(t, <-staleErr, once.ErrLeaseLost)
				v, err = once.Do(context.Background(), once.New(inner).Scope("s"), "k", nil,
					func(context.Context) (string, error) { return "third", nil })
				require.NoError(t, err)
				assert.Equal(t, "fresh", v)
			})
		})
	}
}
