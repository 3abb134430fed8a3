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
// which writes nothing, then read_claim.sql); without it, one on
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
			require.Positive(t, r.Existing.ExpiresIn)
			require.Equal(t, c.replWant, *n, "statements of the replay")
		})
	}
}

// TestInsertFirstHeldKeyUnderReconcilerTx: a duplicate's Claim of a held
// key, while a reconciler's transaction has leased the record (an
// uncommitted update of the row, as a txStore.LeaseHeld or Resolve leaves
// it until the reconciler commits), reports the held record at once, with
// its hold's details, as the one-statement claim does. The insert of
// InsertFirstClaims must not wait LockTimeout for the reconciler's
// transaction and then report a pending record without them.
func TestInsertFirstHeldKeyUnderReconcilerTx(t *testing.T) {
	for _, insertFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "one statement", true: "insert first"}[insertFirst], func(t *testing.T) {
			ctx := context.Background()
			pool := newPool(t, nil)
			s, err := New(pool, &Config{Schema: testSchema, LockTimeout: 3 * time.Second, InsertFirstClaims: insertFirst})
			require.NoError(t, err)
			scope := backendtest.Scope(t)
			p := claimParams(scope, "held")
			r, err := s.Claim(ctx, p)
			require.NoError(t, err)
			require.True(t, r.Claimed)
			ok, err := s.Hold(ctx, backends.HoldParams{Scope: scope, Key: "held", Owner: p.Owner, For: time.Hour, Code: "c", Retention: time.Hour})
			require.NoError(t, err)
			require.True(t, ok)

			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			l, err := s.InTx(tx).LeaseHeld(ctx, backends.LeaseHeldParams{Scope: scope, Key: "held", Owner: "reconciler", Lease: time.Hour})
			require.NoError(t, err)
			require.True(t, l.Leased)

			other, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = other.Rollback(ctx) }()
			for _, c := range []struct {
				name string
				s    backends.Store
			}{{"Store", s}, {"InTx", s.InTx(other)}} {
				start := time.Now()
				r, err = c.s.Claim(ctx, claimParams(scope, "held"))
				took := time.Since(start)
				require.NoError(t, err, c.name)
				require.False(t, r.Claimed, c.name)
				require.Less(t, took, time.Second, "%s: the Claim waited for the reconciler's transaction", c.name)
				require.Equal(t, backends.StateHeld, r.Existing.State, c.name)
				require.Equal(t, "c", r.Existing.Held.Code, c.name)
				require.Positive(t, r.Existing.Held.Remaining, c.name)
			}
			// The InTx Claim left its transaction usable, with the
			// server's lock_timeout.
			var lt string
			require.NoError(t, other.QueryRow(ctx, "SHOW lock_timeout").Scan(&lt))
			require.Equal(t, "0", lt)
		})
	}
}

// The suite with InsertFirstClaims on the simple protocol (text columns:
// insert_claim.sql's RETURNING true, read_claim.sql's row) and on one
// *pgx.Conn (serialDB: the insert and the read are two statements).
func TestConformanceInsertFirstSimpleProtocol(t *testing.T) {
	s, err := New(newPool(t, simpleProtocol), &Config{Schema: testSchema, InsertFirstClaims: true})
	require.NoError(t, err)
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

func TestInTxConformanceInsertFirstSimpleProtocol(t *testing.T) {
	pool := newPool(t, simpleProtocol)
	s, err := New(pool, &Config{Schema: testSchema, InsertFirstClaims: true})
	require.NoError(t, err)
	backendtest.Run(t, func(testing.TB) backends.Store { return &autoTx{pool: pool, s: s} })
}

func TestConformanceInsertFirstOnConn(t *testing.T) {
	s, err := New(newConn(t), &Config{Schema: testSchema, InsertFirstClaims: true})
	require.NoError(t, err)
	_, serial := s.db.(*serialDB)
	require.True(t, serial)
	polling := struct {
		backends.Store
		backends.Admin
	}{s, s}
	backendtest.Run(t, func(testing.TB) backends.Store { return polling })
}

// beforeRead runs f before each read_claim.sql s sends, until the test
// ends.
type beforeRead struct {
	querier
	read string
	f    func()
}

func (b beforeRead) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if sql == b.read {
		b.f()
	}
	return b.querier.QueryRow(ctx, sql, args...)
}

// TestInsertFirstRowGoneBeforeRead: the row insert_claim.sql conflicted
// with is deleted before read_claim.sql reads it (a Delete, a sweep): the
// Claim claims the key (takeover.sql inserts it); and when another claim
// took its place in between, the Claim reports that one in progress.
func TestInsertFirstRowGoneBeforeRead(t *testing.T) {
	ctx := context.Background()
	pool, s, _ := newInsertFirstStore(t)
	scope := backendtest.Scope(t)
	table := s.cfg.qualifiedTable()
	complete := func(key string) {
		p := claimParams(scope, key)
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	}
	complete("gone")
	db := s.db
	t.Cleanup(func() { s.db = db })
	s.db = beforeRead{querier: db, read: s.sql.ReadClaim, f: func() {
		_, err := pool.Exec(ctx, `DELETE FROM `+table+` WHERE scope = $1 AND key = 'gone'`, scope)
		require.NoError(t, err)
	}}
	p := claimParams(scope, "gone")
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed, "the key had no record when the claim read it")
	s.db = db
	rec, err := s.Get(ctx, scope, "gone")
	require.NoError(t, err)
	require.NotZero(t, rec.State)
	require.Equal(t, backends.StatePending, rec.State)

	complete("replaced")
	other := claimParams(scope, "replaced")
	s.db = beforeRead{querier: db, read: s.sql.ReadClaim, f: func() {
		_, err := pool.Exec(ctx, `DELETE FROM `+table+` WHERE scope = $1 AND key = 'replaced'`, scope)
		require.NoError(t, err)
		r, err := newStore(t, pool).Claim(ctx, other)
		require.NoError(t, err)
		require.True(t, r.Claimed)
	}}
	r, err = s.Claim(ctx, claimParams(scope, "replaced"))
	require.NoError(t, err)
	require.False(t, r.Claimed, "another claim holds the key")
	require.Equal(t, backends.StatePending, r.Existing.State)
	require.Positive(t, r.Existing.LeaseRemaining)
}
