package mysqlstore

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestStepsResumeThroughTheCore runs once.Step and once.StepTx on the
// store: an execution that fails retryably after two steps, one of them
// writing a row with its checkpoint in a transaction of BeginTx, leaves
// both checkpointed, and the next execution runs neither again.
func TestStepsResumeThroughTheCore(t *testing.T) {
	for name, cfg := range map[string]Config{"insert-first": {}, "read-first": {ReadFirstClaims: true}, "procedure": {OneRoundTripClaims: true}} {
		t.Run(name, func(t *testing.T) {
			db := newDB(t, nil)
			s := newStore(t, db, cfg)
			table := effects(t, db)
			scope := once.New(s).Scope(backendtest.Scope(t))
			down := errors.New("shipping down")
			var notes, ships int
			intent := func(shipFails bool) (string, error) {
				return once.Do(t.Context(), scope, "order-1", nil, func(ctx context.Context) (string, error) {
					note, err := once.Step(ctx, "note", func(context.Context) (string, error) { notes++; return "noted", nil })
					if err != nil {
						return "", err
					}
					row, err := once.StepTx(ctx, "row", s.BeginTx, func(ctx context.Context, tx Tx) (string, error) {
						_, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (k, n) VALUES ('order-1', 1)")
						return "row", err
					})
					if err != nil {
						return "", err
					}
					ships++
					if shipFails {
						return "", down
					}
					return note + "/" + row, nil
				})
			}
			_, err := intent(true)
			require.ErrorIs(t, err, down)
			v, err := intent(false)
			require.NoError(t, err)
			require.Equal(t, "noted/row", v)
			require.Equal(t, 1, notes, "the checkpointed step did not run again")
			require.Equal(t, 1, countRows(t, db, "SELECT COUNT(*) FROM "+table+" WHERE k = 'order-1'"), "nor did the transactional one")
			require.Equal(t, 2, ships)
		})
	}
}
