package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestStepsResumeThroughTheCore runs once.Step and once.StepTx on the
// Store: a retryable error after a transactional step releases the claim,
// and the retry resumes after that step, whose rows and checkpoint
// committed together; the step runs once, the failed one twice.
func TestStepsResumeThroughTheCore(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	table := effects(t, pool)
	scope := once.New(s).Scope(backendtest.Scope(t))
	down := errors.New("mail server down")
	mails := 0
	intent := func(fail bool) (string, error) {
		return once.Do(t.Context(), scope, "k", nil, func(ctx context.Context) (string, error) {
			debit, err := once.StepTx(ctx, "debit", s.BeginTx, func(ctx context.Context, tx pgx.Tx) (string, error) {
				_, err := tx.Exec(ctx, "INSERT INTO "+table+" (key, n) VALUES ('k', 1)")
				return "debited", err
			})
			if err != nil {
				return "", err
			}
			mail, err := once.Step(ctx, "mail", func(context.Context) (string, error) {
				mails++
				if fail {
					return "", down
				}
				return "mailed", nil
			})
			return debit + "/" + mail, err
		})
	}
	_, err := intent(true)
	require.ErrorIs(t, err, down)
	v, err := intent(false)
	require.NoError(t, err)
	require.Equal(t, "debited/mailed", v)
	require.Equal(t, 1, countRows(t, pool, "SELECT count(*) FROM "+table), "the debit ran once")
	require.Equal(t, 2, mails)
}

// TestStepsInDoTxRollBack: inside once.DoTx a step's checkpoint is
// written in DoTx's transaction, so a retryable error, which rolls the
// transaction back, undoes the checkpoint with the rows, and the retry
// runs the step again.
func TestStepsInDoTxRollBack(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	table := effects(t, pool)
	scope := once.New(s).Scope(backendtest.Scope(t))
	down := errors.New("later step failed")
	runs := 0
	intent := func(fail bool) (int, error) {
		return once.DoTx(t.Context(), scope, "k", nil, s.BeginTx, func(ctx context.Context, tx pgx.Tx) (int, error) {
			n, err := once.Step(ctx, "write", func(ctx context.Context) (int, error) {
				runs++
				_, err := tx.Exec(ctx, "INSERT INTO "+table+" (key, n) VALUES ('k', 1)")
				return runs, err
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
	require.Equal(t, 1, countRows(t, pool, "SELECT count(*) FROM "+table), "one write committed")
}
