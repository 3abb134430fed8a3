package sqlitestore

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/txtest"
)

var _ once.Tx = Tx{}

// TestDoTx runs the transactional mode's cases (internal/txtest) on
// BeginTx.
func TestDoTx(t *testing.T) {
	txtest.Run(t, txStoreUnderTest)
}

// TestHandlerTx runs oncehttp.HandlerTx's cases (internal/txtest) on
// BeginTx: a handler's row and its stored response commit together.
func TestHandlerTx(t *testing.T) {
	txtest.RunHTTP(t, txStoreUnderTest)
}

func txStoreUnderTest(t *testing.T) txtest.Store[Tx] {
	s := openStore(t, tempDB(t), nil)
	_, err := s.writer.Exec("CREATE TABLE effects (k TEXT NOT NULL)")
	require.NoError(t, err)
	return txtest.Store[Tx]{
		Store: s,
		Begin: s.BeginTx,
		Effect: func(ctx context.Context, tx Tx, key string) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO effects (k) VALUES (?)", key)
			return err
		},
		Count:      func(t *testing.T, key string) int { return countEffects(t, s, key) },
		Duplicates: 16,
	}
}

func countEffects(t *testing.T, s *Store, key string) int {
	t.Helper()
	var n int
	require.NoError(t, s.reader.QueryRow("SELECT COUNT(*) FROM effects WHERE k = ?", key).Scan(&n))
	return n
}

// TestDoTxKilledBeforeCommitLeavesNothing: a process killed with SIGKILL
// while its once.DoTx transaction is open (fn wrote its row) leaves
// neither the row nor the claim in the file: the next process runs fn at
// once, with no lease to wait out, and writes the row once.
func TestDoTxKilledBeforeCommitLeavesNothing(t *testing.T) {
	path, scope := tempDB(t), backendtest.Scope(t)
	cmd, lines := startChild(t, path, scope, "dotx")
	require.True(t, lines.Scan(), "child output")
	require.Equal(t, "ready", lines.Text())
	kill9(t, cmd)

	s := openStore(t, path, nil)
	require.Zero(t, countEffects(t, s, "order-1"), "the row rolled back with the transaction")
	v, err := once.DoTx(context.Background(), once.New(s).Scope(scope), "order-1", nil, s.BeginTx, func(ctx context.Context, tx Tx) (string, error) {
		_, err := tx.ExecContext(ctx, "INSERT INTO effects (k) VALUES ('order-1')")
		return "ran again", err
	})
	require.NoError(t, err)
	require.Equal(t, "ran again", v)
	require.Equal(t, 1, countEffects(t, s, "order-1"))
}
