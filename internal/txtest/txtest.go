// Package txtest is the one test of once.DoTx on a real SQL store: each
// SQL backend (PostgreSQL, MySQL/MariaDB, SQLite) runs Run with its own
// BeginTx and an effects table of its own, so that "the claim, fn's
// writes and the outcome commit together or not at all" is checked the
// same way on every store.
package txtest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// Store is one SQL store's transactional mode under test.
type Store[X once.Tx] struct {
	// Store is the store itself, for plain calls outside a transaction.
	Store backends.Store
	// Begin is the store's BeginTx.
	Begin func(context.Context) (X, backends.Store, error)
	// Effect writes one effect row for key through tx.
	Effect func(ctx context.Context, tx X, key string) error
	// Count returns the committed effect rows of key.
	Count func(t *testing.T, key string) int
	// Kill, if set, ends tx's connection from outside, as a crashed
	// database session would.
	Kill func(t *testing.T, tx X)
	// Duplicates is how many calls race for one key.
	Duplicates int
}

// Run runs the cases on the stores newStore returns, each case with a
// store of its own (a fresh effects table and scope), and those of
// RunSteps.
func Run[X once.Tx](t *testing.T, newStore func(t *testing.T) Store[X]) {
	t.Run("Steps", func(t *testing.T) { RunSteps(t, newStore) })
	ctx := context.Background()
	errTimeout := errors.New("provider timed out after the request left")

	t.Run("ExactlyOnceUnderConcurrentDuplicates", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		var ran, replayed, inProgress atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range s.Duplicates {
			wg.Go(func() {
				<-start
				v, err := once.DoTx(ctx, scope, "order-1", once.Fingerprint("fp"), s.Begin, func(ctx context.Context, tx X) (int, error) {
					ran.Add(1)
					err := s.Effect(ctx, tx, "order-1")
					time.Sleep(20 * time.Millisecond) // widen the window for duplicates
					return i, err
				})
				switch {
				case errors.Is(err, once.ErrInProgress):
					inProgress.Add(1)
				case err != nil:
					t.Errorf("duplicate %d: %v", i, err)
				case v != i:
					replayed.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, 1, s.Count(t, "order-1"), "exactly one effect")
		require.EqualValues(t, 1, ran.Load(), "fn ran once")
		require.EqualValues(t, s.Duplicates-1, replayed.Load()+inProgress.Load(), "every other call replayed or was told in progress")
	})

	t.Run("CrashBeforeCommitLeavesNothing", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		require.PanicsWithValue(t, "crash", func() {
			_, _ = once.DoTx(ctx, scope, "k", nil, s.Begin, func(ctx context.Context, tx X) (int, error) {
				require.NoError(t, s.Effect(ctx, tx, "k"))
				panic("crash")
			})
		})
		require.Zero(t, s.Count(t, "k"), "the effect rolled back")
		runsAgain(t, s, scope, "k")
	})

	t.Run("CancelledAfterTheWriteLeavesNothing", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		_, err := once.DoTx(cctx, scope, "k", nil, s.Begin, func(ctx context.Context, tx X) (int, error) {
			require.NoError(t, s.Effect(ctx, tx, "k"))
			cancel()
			return 0, ctx.Err()
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, s.Count(t, "k"), "the effect rolled back")
		runsAgain(t, s, scope, "k")
	})

	t.Run("RetryableErrorLeavesNothing", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		boom := errors.New("downstream unavailable")
		out, err := once.DoTxOutcome(ctx, scope, "k", nil, s.Begin, func(ctx context.Context, tx X) (int, error) {
			require.NoError(t, s.Effect(ctx, tx, "k"))
			return 0, boom
		})
		require.ErrorIs(t, err, boom)
		require.Equal(t, once.Released, out.Status)
		require.Zero(t, s.Count(t, "k"))
		runsAgain(t, s, scope, "k")
	})

	t.Run("FinalErrorCommitsWithTheWrites", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		_, err := once.DoTx(ctx, scope, "k", nil, s.Begin, func(ctx context.Context, tx X) (int, error) {
			require.NoError(t, s.Effect(ctx, tx, "k"))
			return 0, once.Final(errors.New("card declined"))
		})
		require.EqualError(t, err, "card declined")
		out, again := once.DoTxOutcome(ctx, scope, "k", nil, s.Begin, func(context.Context, X) (int, error) {
			t.Error("fn ran after a final error")
			return 0, nil
		})
		require.Equal(t, once.Replayed, out.Status)
		require.EqualError(t, again, err.Error())
		require.Equal(t, 1, s.Count(t, "k"))
	})

	t.Run("HoldKeepsTheKeyHeldAndUndoesTheWrites", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store, once.WithHoldFor(once.HoldUntilResolved)).Scope(backendtest.Scope(t))
		out, err := once.DoTxOutcome(ctx, scope, "k", nil, s.Begin, func(ctx context.Context, tx X) (int, error) {
			require.NoError(t, s.Effect(ctx, tx, "k"))
			return 0, once.Hold(errTimeout)
		})
		require.ErrorIs(t, err, errTimeout)
		require.Equal(t, once.Held, out.Status)
		require.Zero(t, s.Count(t, "k"), "fn's writes rolled back to the savepoint")

		_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { t.Error("ran while held"); return 0, nil })
		var inProgress *once.InProgressError
		require.ErrorAs(t, err, &inProgress, "held, outside the transaction")
		require.True(t, inProgress.Held)

		require.NoError(t, once.Resolve(ctx, scope, "k", nil, 7, nil))
		v, err := once.DoTx(ctx, scope, "k", nil, s.Begin, func(context.Context, X) (int, error) { t.Error("ran after the resolve"); return 0, nil })
		require.NoError(t, err)
		require.Equal(t, 7, v)
	})

	t.Run("KilledConnectionLeavesNothing", func(t *testing.T) {
		s := newStore(t)
		if s.Kill == nil {
			t.Skip("the store has no connection to kill")
		}
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		_, err := once.DoTx(ctx, scope, "k", nil, s.Begin, func(ctx context.Context, tx X) (int, error) {
			require.NoError(t, s.Effect(ctx, tx, "k"))
			s.Kill(t, tx)
			return 1, s.Effect(ctx, tx, "k")
		})
		require.Error(t, err)
		require.Zero(t, s.Count(t, "k"))
		runsAgain(t, s, scope, "k")
	})
}

// runsAgain checks that key's claim is gone (fn runs again, writing its
// effect once) after a call that committed nothing.
func runsAgain[X once.Tx](t *testing.T, s Store[X], scope once.Scope, key string) {
	t.Helper()
	v, err := once.DoTx(context.Background(), scope, key, nil, s.Begin, func(ctx context.Context, tx X) (string, error) {
		return "ran again", s.Effect(ctx, tx, key)
	})
	require.NoError(t, err)
	require.Equal(t, "ran again", v)
	require.Equal(t, 1, s.Count(t, key))
}
