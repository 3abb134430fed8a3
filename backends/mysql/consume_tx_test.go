package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// sqlTx is an *sql.Tx as a once.Tx (whose methods take a context).
type sqlTx struct{ *sql.Tx }

func (t sqlTx) Commit(context.Context) error   { return t.Tx.Commit() }
func (t sqlTx) Rollback(context.Context) error { return t.Tx.Rollback() }

// TestConsumeTxHoldKeepsTheKeyHeld: through a MySQL transaction, a
// handler's Hold error leaves the key held after once.ConsumeTx (the
// handler's writes rolled back to the savepoint taken after the claim, the
// held claim committed), so the redelivery gets ReasonInProgress and the
// handler, whose outcome is unknown, does not run again until the key is
// resolved. ConsumeTx rolled the hold back with the rest and answered
// ReasonHeld for a key that was not held. When the transaction was rolled
// back whole under the handler (as InnoDB does on a deadlock), the key
// cannot be held: ReasonStoreDown, and the redelivery runs the handler.
func TestConsumeTxHoldKeepsTheKeyHeld(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	table := effects(t, db)
	scope := once.New(s, once.WithHoldFor(once.HoldUntilResolved)).Scope(backendtest.Scope(t))
	ctx := context.Background()
	begin := func(ctx context.Context) (sqlTx, backends.Store, error) {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
		if err != nil {
			return sqlTx{}, nil, err
		}
		return sqlTx{tx}, s.InTx(tx), nil
	}
	effect := func(ctx context.Context, tx sqlTx, key string) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (k, n) VALUES (?, 1)", key)
		return err
	}
	count := func(key string) int {
		return countRows(t, db, "SELECT COUNT(*) FROM "+table+" WHERE k = ?", key)
	}
	errTimeout := errors.New("provider timed out after the request left")

	runs := 0
	held := func(ctx context.Context, tx sqlTx) error {
		runs++
		require.NoError(t, effect(ctx, tx, "m1"))
		_, err := tx.ExecContext(ctx, "SELECT * FROM no_such_table_"+randomSuffix())
		require.Error(t, err, "a failed statement before the Hold")
		return once.Hold(errTimeout)
	}
	d := once.ConsumeTx(ctx, scope, "m1", nil, begin, held)
	require.Equal(t, once.ReasonHeld, d.Reason, "%v", d.Err)
	require.ErrorIs(t, d.Err, errTimeout)
	require.Zero(t, count("m1"), "the handler's writes rolled back")

	_, err := once.Do(ctx, scope, "m1", nil, func(context.Context) (int, error) { t.Error("ran"); return 0, nil })
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress, "held, outside the transaction")
	require.True(t, inProgress.Held)

	d = once.ConsumeTx(ctx, scope, "m1", nil, begin, held)
	require.Equal(t, once.ReasonInProgress, d.Reason, "%v", d.Err)
	require.Equal(t, 1, runs, "the handler did not run again")

	require.NoError(t, once.Resolve(ctx, scope, "m1", nil, struct{}{}, nil))
	d = once.ConsumeTx(ctx, scope, "m1", nil, begin, held)
	require.Equal(t, once.ReasonReplayed, d.Reason, "%v", d.Err)
	require.Equal(t, 1, runs)

	t.Run("TransactionRolledBackWhole", func(t *testing.T) {
		d := once.ConsumeTx(ctx, scope, "m2", nil, begin, func(ctx context.Context, tx sqlTx) error {
			require.NoError(t, effect(ctx, tx, "m2"))
			_, err := tx.ExecContext(ctx, "ROLLBACK") // the savepoint goes with it
			require.NoError(t, err)
			return once.Hold(errTimeout)
		})
		require.Equal(t, once.RetryLater, d.Action)
		require.Equal(t, once.ReasonStoreDown, d.Reason, "%v", d.Err)
		var se *once.StoreError
		require.ErrorAs(t, d.Err, &se)
		require.Equal(t, "rollback to savepoint", se.Op)
		require.ErrorIs(t, d.Err, errTimeout)
		d = once.ConsumeTx(ctx, scope, "m2", nil, begin, func(ctx context.Context, tx sqlTx) error { return effect(ctx, tx, "m2") })
		require.Equal(t, once.ReasonDone, d.Reason, "%v", d.Err)
		require.Equal(t, 1, count("m2"))
	})
}
