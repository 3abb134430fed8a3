package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// newInsertFirstStore returns a Store with InsertFirstClaims and one
// without, on one pool and table.
func newInsertFirstStore(tb testing.TB) (*pgxpool.Pool, *Store, *Store) {
	tb.Helper()
	pool := newPool(tb, nil)
	s, err := New(pool, &Config{Schema: testSchema, InsertFirstClaims: true})
	require.NoError(tb, err)
	return pool, s, newStore(tb, pool)
}

// TestConformanceInsertFirst runs the suite on a Store with
// InsertFirstClaims, and on its InTx stores.
func TestConformanceInsertFirst(t *testing.T) {
	_, s, _ := newInsertFirstStore(t)
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

func TestInTxConformanceInsertFirst(t *testing.T) {
	pool, s, _ := newInsertFirstStore(t)
	backendtest.Run(t, func(testing.TB) backends.Store { return &autoTx{pool: pool, s: s} })
}

// countingQuerier counts the statements a Store sends.
type countingQuerier struct {
	querier
	n *int
}

func (c countingQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	*c.n++
	return c.querier.QueryRow(ctx, sql, args...)
}

func (c countingQuerier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	*c.n++
	return c.querier.Exec(ctx, sql, args...)
}

// countStatements makes s count the statements it sends from now on, until
// the test ends.
func countStatements(t *testing.T, s *Store) *int {
	n := new(int)
	db := s.db
	s.db = countingQuerier{querier: db, n: n}
	t.Cleanup(func() { s.db = db })
	return n
}

// TestInsertFirstStatements: with InsertFirstClaims a first execution's
// claim is one statement (the plain insert) and a replay two (the insert,
// which writes nothing, then the one-statement claim); without it, one on
// both. Stores with and without it share one table: each answers the
// other's records.
func TestInsertFirstStatements(t *testing.T) {
	ctx := context.Background()
	_, first, plain := newInsertFirstStore(t)
	scope := backendtest.Scope(t)
	for _, c := range []struct {
		name                string
		claimer, replayer   *Store
		firstWant, replWant int
	}{
		{"insert first, then its own replay", first, first, 1, 2},
		{"one statement, replayed by insert first", plain, first, 1, 2},
		{"insert first, replayed by one statement", first, plain, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := "k-" + c.name
			n := countStatements(t, c.claimer)
			p := claimParams(scope, key)
			r, err := c.claimer.Claim(ctx, p)
			require.NoError(t, err)
			require.True(t, r.Claimed)
			require.Equal(t, c.firstWant, *n, "statements of the first claim")
			ok, err := c.claimer.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
			require.NoError(t, err)
			require.True(t, ok)

			n = countStatements(t, c.replayer)
			r, err = c.replayer.Claim(ctx, claimParams(scope, key))
			require.NoError(t, err)
			require.False(t, r.Claimed)
			require.Equal(t, backends.StateCompleted, r.Existing.State)
			require.Equal(t, []byte("v"), r.Existing.Outcome)
			require.Positive(t, r.Existing.RetentionRemaining)
			require.Equal(t, c.replWant, *n, "statements of the replay")
		})
	}
}
