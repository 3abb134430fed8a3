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
	"github.com/stagedoor/once/backends/internal/claimmix"
)

// claimOrders are the two orders of a Claim's plain statements.
var claimOrders = []struct {
	name        string
	insertFirst bool
}{{"insert first", true}, {"read first", false}}

// pinOrder makes s send its claims' insert first, or its read first,
// whatever their answers: a Mix that never moves.
func pinOrder(s *Store, insertFirst bool) {
	r := claimmix.Rule{} // Rise 0: score stays at Start, 0
	if insertFirst {
		r.Below = 1
	}
	s.mix = claimmix.New(r)
}

// newOrderedStore returns a Store on pool whose claims send their insert
// first, or their read first (pinOrder).
func newOrderedStore(tb testing.TB, pool *pgxpool.Pool, insertFirst bool) *Store {
	s := newStore(tb, pool)
	pinOrder(s, insertFirst)
	return s
}

// TestConformanceClaimOrder runs the suite on a Store pinned to each
// order (the default Store switches between them; see TestConformance).
func TestConformanceClaimOrder(t *testing.T) {
	for _, o := range claimOrders {
		t.Run(o.name, func(t *testing.T) {
			s := newOrderedStore(t, newPool(t, nil), o.insertFirst)
			backendtest.Run(t, func(testing.TB) backends.Store { return s })
		})
	}
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

// TestClaimOrderStatements: insert first, a first execution's claim is one
// statement (the plain insert) and a replay two (the insert, which writes
// nothing, then read_claim.sql); read first, a first execution two (the
// read, then the insert) and a replay one. Stores of either order share
// one table: each answers the other's records.
func TestClaimOrderStatements(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	first, read := newOrderedStore(t, pool, true), newOrderedStore(t, pool, false)
	scope := backendtest.Scope(t)
	for _, c := range []struct {
		name                string
		claimer, replayer   *Store
		firstWant, replWant int
	}{
		{"insert first, then its own replay", first, first, 1, 2},
		{"read first, then its own replay", read, read, 2, 1},
		{"read first, replayed by insert first", read, first, 2, 2},
		{"insert first, replayed by read first", first, read, 1, 1},
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

// TestHeldKeyUnderReconcilerTx: a duplicate's Claim of a held key, while a
// reconciler's transaction has leased the record (an uncommitted update of
// the row, as a txStore.LeaseHeld or Resolve leaves it until the
// reconciler commits), reports the held record at once, with its hold's
// details. An insert that goes first must not wait LockTimeout for the
// reconciler's transaction and then report a pending record without them.
func TestHeldKeyUnderReconcilerTx(t *testing.T) {
	for _, o := range claimOrders {
		t.Run(o.name, func(t *testing.T) {
			ctx := context.Background()
			pool := newPool(t, nil)
			s, err := New(pool, &Config{Schema: testSchema, LockTimeout: 3 * time.Second})
			require.NoError(t, err)
			pinOrder(s, o.insertFirst)
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

// before runs f before each statement sql s sends, until the test ends.
type before struct {
	querier
	sql string
	f   func()
}

func (b before) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if sql == b.sql {
		b.f()
	}
	return b.querier.QueryRow(ctx, sql, args...)
}

func (b before) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if sql == b.sql {
		b.f()
	}
	return b.querier.Exec(ctx, sql, args...)
}

// TestRowGoneBeforeRead: insert first, the row insert_claim.sql conflicted
// with is deleted before read_claim.sql reads it (a Delete, a sweep): the
// Claim claims the key (takeover.sql inserts it); and when another claim
// took its place in between, the Claim reports that one in progress.
func TestRowGoneBeforeRead(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	s := newOrderedStore(t, pool, true)
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
	s.db = before{querier: db, sql: s.sql.ReadClaim, f: func() {
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
	require.Equal(t, backends.StatePending, rec.State)

	complete("replaced")
	other := claimParams(scope, "replaced")
	s.db = before{querier: db, sql: s.sql.ReadClaim, f: func() {
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

// TestRowCommittedAfterRead: read first, a claim commits the key's row
// after read_claim.sql saw none and before insert_claim.sql runs: the
// insert inserts nothing, and the Claim reports that claim in progress
// (takeover.sql reads it), or its completed record.
func TestRowCommittedAfterRead(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	s := newOrderedStore(t, pool, false)
	scope := backendtest.Scope(t)
	db := s.db
	t.Cleanup(func() { s.db = db })
	for _, done := range []bool{false, true} {
		key := map[bool]string{false: "pending", true: "completed"}[done]
		other := claimParams(scope, key)
		ran := false
		s.db = before{querier: db, sql: s.sql.InsertClaim, f: func() {
			if ran {
				return
			}
			ran = true
			o := newStore(t, pool)
			r, err := o.Claim(ctx, other)
			require.NoError(t, err)
			require.True(t, r.Claimed)
			if done {
				ok, err := o.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: other.Owner, Outcome: []byte("v"), Retention: time.Hour})
				require.NoError(t, err)
				require.True(t, ok)
			}
		}}
		r, err := s.Claim(ctx, claimParams(scope, key))
		require.NoError(t, err)
		require.True(t, ran)
		require.False(t, r.Claimed, "another claim holds the key")
		if done {
			require.Equal(t, backends.StateCompleted, r.Existing.State)
			require.Equal(t, []byte("v"), r.Existing.Outcome)
		} else {
			require.Equal(t, backends.StatePending, r.Existing.State)
			require.Positive(t, r.Existing.LeaseRemaining)
		}
	}
}
