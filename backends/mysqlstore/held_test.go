package mysqlstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestClaimReportsExpiresIn: a replay reports the completed
// record's time left by the server's clock, in every claim mode and in a
// transaction, from the claim's own read.
func TestClaimReportsExpiresIn(t *testing.T) {
	db := newDB(t, nil)
	for name, cfg := range map[string]Config{
		"insert-first": {}, "read-first": {ReadFirstClaims: true}, "procedure": {OneRoundTripClaims: true},
	} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, db, cfg)
			ctx := context.Background()
			p := claimParams(backendtest.Scope(t), "k")
			r, err := s.Claim(ctx, p)
			require.NoError(t, err)
			require.True(t, r.Claimed)
			ok, err := s.Complete(ctx, backends.CompleteParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner, Outcome: []byte("v"), Retention: 2 * time.Hour})
			require.NoError(t, err)
			require.True(t, ok)
			check := func(store backends.Store) {
				r, err = store.Claim(ctx, claimParams(p.Scope, p.Key))
				require.NoError(t, err)
				require.False(t, r.Claimed)
				require.Equal(t, backends.StateCompleted, r.Existing.State)
				require.LessOrEqual(t, r.Existing.ExpiresIn, 2*time.Hour)
				require.Greater(t, r.Existing.ExpiresIn, 2*time.Hour-time.Minute)
				require.Zero(t, r.Existing.Age, "a completed record has no age")
			}
			check(s)
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback() }()
			check(s.InTx(tx))
		})
	}
}

// TestHeldInTx: a claim held inside a transaction is held once it
// commits, and gone with the claim when it rolls back.
func TestHeldInTx(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	ctx := context.Background()
	scope := backendtest.Scope(t)
	for _, commit := range []bool{true, false} {
		key := map[bool]string{true: "commit", false: "rollback"}[commit]
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		ts := s.InTx(tx)
		p := claimParams(scope, key)
		r, err := ts.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := ts.Hold(ctx, backends.HoldParams{Scope: scope, Key: key, Owner: p.Owner, For: time.Hour, Code: "c", Message: "m", Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		if commit {
			require.NoError(t, tx.Commit())
		} else {
			require.NoError(t, tx.Rollback())
		}
		rec, err := s.Get(ctx, scope, key)
		found := rec.State != 0
		require.NoError(t, err)
		require.Equal(t, commit, found)
		if commit {
			require.Equal(t, backends.StateHeld, rec.State)
			require.Equal(t, "c", rec.Held.Code)
		}
	}
}

// TestHoldRejectsLongDetails: a code or message longer than the
// contract's limits is an *InputError, never silently cut by the server.
func TestHoldRejectsLongDetails(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	for _, p := range []backends.HoldParams{
		{Code: strings.Repeat("c", backends.MaxHeldCodeLen+1)},
		{Message: strings.Repeat("m", backends.MaxHeldMessageLen+1)},
	} {
		p.Scope, p.Key, p.Owner, p.For, p.Retention = "s", "k", "o", time.Hour, time.Hour
		_, err := s.Hold(context.Background(), p)
		var ie *InputError
		require.ErrorAs(t, err, &ie)
	}
	_, err := s.List(context.Background(), backends.ListParams{State: 4})
	var le *backends.ListParamsError
	require.ErrorAs(t, err, &le, "no such state")
	require.Equal(t, "State", le.Field)
}

// TestListAndSweepUseTheStateIndex: the server plans a List page and a
// Sweep batch as a range of the index on (state, expires_at) read in
// index order — no full scan, no sort of the range — with and without
// a scope.
func TestListAndSweepUseTheStateIndex(t *testing.T) {
	db := newDB(t, nil)
	s := newTable(t, db, Config{})
	ctx := context.Background()
	scope := backendtest.Scope(t)
	for i := range 40 {
		p := claimParams(scope, "k"+strings.Repeat("x", i))
		_, err := s.Claim(ctx, p)
		require.NoError(t, err)
		if i%2 == 0 {
			ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: p.Key, Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
			require.NoError(t, err)
			require.True(t, ok)
		}
	}
	_, err := db.ExecContext(ctx, "ANALYZE TABLE "+quote(s.cfg.table))
	require.NoError(t, err)
	index := s.cfg.table + "_state_idx"
	for _, sc := range []string{"", scope} {
		for _, state := range []backends.State{backends.StatePending, backends.StateHeld} {
			rows, err := db.QueryContext(ctx, "EXPLAIN "+s.sql.list, int64(state), minCursorUS, minCursorUS, "", "", "", 0, sc, sc, "", "", 10)
			require.NoError(t, err)
			plan := explained(t, rows)
			require.Equal(t, "range", plan["type"], "list of state %d, scope %q: %v", state, sc, plan)
			require.Equal(t, index, plan["key"])
			require.NotContains(t, plan["Extra"], "filesort", "the page is read in index order and stops when full")
		}
	}
	sweep := strings.NewReplacer(placeholderTable, "`"+s.cfg.table).Replace(sweepSQL)
	rows, err := db.QueryContext(ctx, "EXPLAIN "+sweep, 10)
	require.NoError(t, err)
	plan := explained(t, rows)
	require.Equal(t, "range", plan["type"], "%v", plan)
	require.Equal(t, index, plan["key"])
	require.NotContains(t, plan["Extra"], "filesort")
}

// explained returns the one row of an EXPLAIN by column name.
func explained(t *testing.T, rows interface {
	Columns() ([]string, error)
	Next() bool
	Scan(...any) error
	Close() error
}) map[string]string {
	t.Helper()
	defer func() { _ = rows.Close() }()
	cols, err := rows.Columns()
	require.NoError(t, err)
	require.True(t, rows.Next())
	vals := make([]*string, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	require.NoError(t, rows.Scan(dest...))
	plan := map[string]string{}
	for i, c := range cols {
		if vals[i] != nil {
			plan[c] = *vals[i]
		}
	}
	require.False(t, rows.Next(), "one table, one row")
	return plan
}

// TestHoldThroughAWrapper: once.Do over a wrapper that embeds
// backends.Store (hiding Lister, Admin, …) still holds the key on
// MariaDB: a retry answers in progress with Held set and the hold left.
func TestHoldThroughAWrapper(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	scope := once.New(struct{ backends.Store }{s}, once.WithLease(time.Minute), once.WithHoldFor(time.Hour)).Scope(backendtest.Scope(t))
	ctx := context.Background()
	_, err := once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 0, once.Hold(errors.New("timeout")) })
	require.Error(t, err)
	_, err = once.Do(ctx, scope, "k", nil, func(context.Context) (int, error) { return 1, nil })
	var inProgress *once.InProgressError
	require.ErrorAs(t, err, &inProgress)
	require.True(t, inProgress.Held, "held, not pending")
	require.Greater(t, inProgress.RetryAfter, 59*time.Minute, "the hold's time left, by the server's clock")
}

// TestMigrateLongestTableName: the longest table name New accepts
// migrates, every derived name (index, procedures, versions table)
// within MySQL's 64 characters.
func TestMigrateLongestTableName(t *testing.T) {
	db := newDB(t, nil)
	name := "t" + randomSuffix() + strings.Repeat("x", maxTableLen-13)
	require.Len(t, name, maxTableLen)
	_, err := New(db, &Config{Table: name + "x"})
	require.Error(t, err, "one byte longer is refused")
	require.NoError(t, migrateTable(context.Background(), db, name))
}

// TestRefusedLeaseHeldReportsALiveLease: a LeaseHeld refused by another
// reconciler's lease reports the held record with that lease live,
// although it reads the record in a second statement: when the lease
// ends between the two, it tries again instead of reporting a lapsed
// lease it did not take. Leases of a few hundred microseconds end in that
// window on some of the keys.
func TestRefusedLeaseHeldReportsALiveLease(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	ctx := context.Background()
	scope := backendtest.Scope(t)
	for i := range 100 {
		short := time.Duration(50+i%20*50) * time.Microsecond
		p := claimParams(scope, "k"+strings.Repeat("x", i))
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := s.Hold(ctx, backends.HoldParams{Scope: scope, Key: p.Key, Owner: p.Owner, For: time.Hour, Code: "c", Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		l, err := s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: scope, Key: p.Key, Owner: backendtest.Token(), Lease: short})
		require.NoError(t, err)
		require.True(t, l.Leased)
		l, err = s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: scope, Key: p.Key, Owner: backendtest.Token(), Lease: time.Hour})
		require.NoError(t, err)
		rec := l.Existing
		require.False(t, !l.Leased && rec.State == backends.StateHeld && rec.LeaseRemaining <= 0,
			"key %d: a refused LeaseHeld reported a held record with no live lease: %+v", i, rec)
	}
}
