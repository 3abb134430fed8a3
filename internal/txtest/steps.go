package txtest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/oncehttp"
)

// RunSteps runs the cases of once.StepTx on the stores newStore returns:
// a step's rows commit with its checkpoint or not at all, a later
// execution of the intent does not write them again, and a stale owner
// writes nothing.
func RunSteps[X once.Tx](t *testing.T, newStore func(t *testing.T) Store[X]) {
	ctx := context.Background()
	down := errors.New("shipping down")

	t.Run("CheckpointCommitsWithTheTransaction", func(t *testing.T) {
		s := newStore(t)
		admin, ok := backends.As[backends.Admin](s.Store)
		require.True(t, ok, "a SQL store has Admin")
		scope, owner := backendtest.Scope(t), backendtest.Token()
		r, err := s.Store.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		for _, commit := range []bool{false, true} {
			tx, ts, err := s.Begin(ctx)
			require.NoError(t, err)
			ok, err := ts.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: "k", Owner: owner, Steps: []byte("in tx")})
			require.NoError(t, err)
			require.True(t, ok)
			if commit {
				require.NoError(t, tx.Commit(ctx))
			} else {
				require.NoError(t, tx.Rollback(ctx))
			}
			rec, err := admin.Get(ctx, scope, "k")
			require.NoError(t, err)
			if commit {
				require.Equal(t, []byte("in tx"), rec.Steps, "committed with the transaction")
			} else {
				require.Nil(t, rec.Steps, "rolled back with the transaction: none of its bytes")
			}
		}
	})

	t.Run("ResumeDoesNotWriteTheRowsAgain", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		var rowRuns, shipRuns int
		intent := func(shipFails bool) (string, error) {
			return once.Do(ctx, scope, "order-1", nil, func(ctx context.Context) (string, error) {
				row, err := once.StepTx(ctx, "row", s.Begin, func(ctx context.Context, tx X) (string, error) {
					rowRuns++
					return "row", s.Effect(ctx, tx, "order-1")
				})
				if err != nil {
					return "", err
				}
				shipRuns++
				if shipFails {
					return "", down
				}
				return row + " shipped", nil
			})
		}
		_, err := intent(true)
		require.ErrorIs(t, err, down)
		require.Equal(t, 1, s.Count(t, "order-1"), "the row committed with its checkpoint")
		v, err := intent(false)
		require.NoError(t, err)
		require.Equal(t, "row shipped", v)
		require.Equal(t, 1, rowRuns, "the resumed execution replayed the row step")
		require.Equal(t, 2, shipRuns)
		require.Equal(t, 1, s.Count(t, "order-1"))
	})

	t.Run("RetryableErrorWritesNoRowAndNoCheckpoint", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		runs := 0
		step := func(fail bool) (string, error) {
			return once.Do(ctx, scope, "order-1", nil, func(ctx context.Context) (string, error) {
				return once.StepTx(ctx, "row", s.Begin, func(ctx context.Context, tx X) (string, error) {
					runs++
					if err := s.Effect(ctx, tx, "order-1"); err != nil || !fail {
						return "row", err
					}
					return "", down
				})
			})
		}
		_, err := step(true)
		require.ErrorIs(t, err, down)
		require.Zero(t, s.Count(t, "order-1"), "rolled back with the step")
		v, err := step(false)
		require.NoError(t, err)
		require.Equal(t, "row", v)
		require.Equal(t, 2, runs)
		require.Equal(t, 1, s.Count(t, "order-1"))
	})

	t.Run("StaleOwnerWritesNothing", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		_, err := once.Do(ctx, scope, "order-1", nil, func(ctx context.Context) (string, error) {
			// An operator deletes the record while the step runs: the
			// claim is lost, and the step's fenced checkpoint fails.
			a, ok := backends.As[backends.Admin](s.Store)
			require.True(t, ok)
			_, err := a.Delete(ctx, scope.Name(), "order-1")
			require.NoError(t, err)
			return once.StepTx(ctx, "row", s.Begin, func(ctx context.Context, tx X) (string, error) {
				return "row", s.Effect(ctx, tx, "order-1")
			})
		})
		require.ErrorIs(t, err, once.ErrLeaseLost)
		require.Zero(t, s.Count(t, "order-1"), "the row rolled back with the refused checkpoint")
	})

	t.Run("HandlerRowCommitsWithItsCheckpoint", func(t *testing.T) {
		s := newStore(t)
		scope := backendtest.Scope(t)
		m, err := oncehttp.New(once.New(s.Store), oncehttp.Config{Scope: func(*http.Request) (string, error) { return scope, nil }})
		require.NoError(t, err)
		var orderServiceUp atomic.Bool
		var rowRuns atomic.Int32
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := once.StepTx(r.Context(), "row", s.Begin, func(ctx context.Context, tx X) (string, error) {
				rowRuns.Add(1)
				return "row", s.Effect(ctx, tx, "order-1")
			})
			switch {
			case err != nil:
				http.Error(w, err.Error(), http.StatusInternalServerError)
			case !orderServiceUp.Load():
				http.Error(w, "order service unavailable", http.StatusServiceUnavailable)
			default:
				w.WriteHeader(http.StatusCreated)
			}
		}))
		send := func() int {
			req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader("{}"))
			req.Header.Set(oncehttp.DefaultHeader, "order-1")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			return rec.Code
		}
		require.Equal(t, http.StatusServiceUnavailable, send())
		orderServiceUp.Store(true)
		require.Equal(t, http.StatusCreated, send())
		require.Equal(t, http.StatusCreated, send())
		require.EqualValues(t, 1, rowRuns.Load(), "the retry resumed after the row's checkpoint")
		require.Equal(t, 1, s.Count(t, "order-1"))
	})

	t.Run("InsideDoTxTheyRollBackWithIt", func(t *testing.T) {
		// Inside DoTx a step's checkpoint is in DoTx's transaction: a
		// retryable error rolls it back with the rows, and the retry runs
		// the step again.
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		runs := 0
		intent := func(fail bool) (int, error) {
			return once.DoTx(ctx, scope, "order-1", nil, s.Begin, func(ctx context.Context, tx X) (int, error) {
				n, err := once.Step(ctx, "row", func(ctx context.Context) (int, error) {
					runs++
					return runs, s.Effect(ctx, tx, "order-1")
				})
				if err == nil && fail {
					err = down
				}
				return n, err
			})
		}
		_, err := intent(true)
		require.ErrorIs(t, err, down)
		n, err := intent(false)
		require.NoError(t, err)
		require.Equal(t, 2, n, "the rolled-back checkpoint is not replayed")
		require.Equal(t, 1, s.Count(t, "order-1"), "one write committed")
	})

	t.Run("RefusedInsideDoTx", func(t *testing.T) {
		s := newStore(t)
		scope := once.New(s.Store).Scope(backendtest.Scope(t))
		_, err := once.DoTx(ctx, scope, "order-1", nil, s.Begin, func(ctx context.Context, _ X) (string, error) {
			return once.StepTx(ctx, "row", s.Begin, func(ctx context.Context, tx X) (string, error) { return "row", nil })
		})
		var invalid *once.InvalidInputError
		require.ErrorAs(t, err, &invalid)
		require.Equal(t, "ctx", invalid.Field)
	})
}
