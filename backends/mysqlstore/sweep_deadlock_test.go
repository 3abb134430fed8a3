package mysqlstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestSweepRunsADeadlockedBatchAgain: a Sweep batch that InnoDB picks as
// a deadlock victim is rolled back whole; Sweep runs it again and
// deletes the expired rows, instead of returning the deadlock. The
// writer that deadlocks with it has modified more rows, so InnoDB picks
// the sweep as its victim.
func TestSweepRunsADeadlockedBatchAgain(t *testing.T) {
	db := newDB(t, nil)
	s := newTable(t, db, Config{})
	ctx := context.Background()
	scope := backendtest.Scope(t)
	table := quote(s.cfg.table)
	for _, key := range []string{"a", "b"} {
		_, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: key, Outcome: []byte("v"), Retention: time.Millisecond})
		require.NoError(t, err)
	}
	for i := range 20 {
		_, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: fmt.Sprintf("live%d", i), Outcome: []byte("v"), Retention: time.Hour})
		require.NoError(t, err)
	}
	backendtest.Elapse(t, s, time.Millisecond) // a and b expired

	writer, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = writer.Rollback() }()
	_, err = writer.ExecContext(ctx, "UPDATE "+table+" SET outcome = 'w' WHERE scope = ? AND `key` LIKE 'live%'", scope)
	require.NoError(t, err)
	_, err = writer.ExecContext(ctx, "UPDATE "+table+" SET outcome = 'w' WHERE scope = ? AND `key` = 'b'", scope)
	require.NoError(t, err)

	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := s.Sweep(ctx)
		done <- result{n, err}
	}()
	// The sweep deletes a, then waits for b, which the writer holds (a
	// two-row DELETE still running after 50 ms).
	require.Eventually(t, func() bool {
		var waiting int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE info LIKE ? AND state = 'Updating' AND time_ms > 50",
			"%DELETE%"+s.cfg.table+"%").Scan(&waiting)
		return err == nil && waiting > 0
	}, 30*time.Second, 5*time.Millisecond)
	// The writer now wants a: a deadlock, whose victim is the sweep.
	_, err = writer.ExecContext(ctx, "UPDATE "+table+" SET outcome = 'w' WHERE scope = ? AND `key` = 'a'", scope)
	require.NoError(t, err, "the writer, not the sweep, was the deadlock's victim")
	require.NoError(t, writer.Commit())

	r := <-done
	require.NoError(t, r.err)
	require.EqualValues(t, 2, r.n, "a and b, swept after the deadlock")
}
