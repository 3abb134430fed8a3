package mysqlstore

import (
	"context"
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// The statements of the code before migration 002 (statements.go at
// aff14b2^, rendered by newStatements for LockTimeout 5 s), copied here and
// never derived from the current code, so that a migration that changes
// what they need fails TestRollingDeployFrom001. `once_records` is the
// table placeholder.
const (
	oldClaimCall   = "/*M!100102 SET STATEMENT innodb_lock_wait_timeout=5 FOR */ CALL `once_records_claim`(?, ?, ?, ?, ?, ?, ?)"
	oldResolveCall = "/*M!100102 SET STATEMENT innodb_lock_wait_timeout=5 FOR */ CALL `once_records_resolve`(?, ?, ?, ?, ?, ?, ?)"
	oldComplete    = "/*M!100102 SET STATEMENT innodb_lock_wait_timeout=5 FOR */ UPDATE /*+ SET_VAR(innodb_lock_wait_timeout=5) */ `once_records` SET\n" +
		"\tcompleted_at = UTC_TIMESTAMP(6),\n" +
		"\texpires_at = COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, '9999-12-31 23:59:59.999999'),\n" +
		"\tlease_until = NULL, outcome = ?, revision = revision + 1, state = 2\n" +
		"WHERE scope = ? AND `key` = ? AND owner = ? AND state = 1 AND expires_at > UTC_TIMESTAMP(6)"
)

// oldRow is the row the code before 002 scanned: six columns from the
// claim, five (no took_over) from Resolve.
type oldRow struct {
	done, tookOver bool
	state          int64
	fp, outcome    []byte
	leaseUS        sql.NullInt64
}

// oldCode runs the statements of the code before 002, on table, as that
// code ran them: prepared (the driver's binary protocol), on the pool.
type oldCode struct {
	db    *sql.DB
	table string
}

func (o oldCode) sql(query string) string {
	return strings.ReplaceAll(query, placeholderTable, "`"+o.table)
}

func (o oldCode) claim(t *testing.T, scope, key, owner string, lease time.Duration) (oldRow, error) {
	t.Helper()
	var r oldRow
	err := o.db.QueryRow(o.sql(oldClaimCall), scope, key, []byte("fp"), owner, micros(lease), micros(time.Hour), 5).
		Scan(&r.done, &r.tookOver, &r.state, &r.fp, &r.outcome, &r.leaseUS)
	return r, err
}

func (o oldCode) resolve(t *testing.T, scope, key, owner, outcome string) oldRow {
	t.Helper()
	var r oldRow
	require.NoError(t, o.db.QueryRow(o.sql(oldResolveCall), scope, key, []byte("fp"), []byte(outcome), owner, micros(time.Hour), 5).
		Scan(&r.done, &r.state, &r.fp, &r.outcome, &r.leaseUS))
	return r
}

func (o oldCode) complete(t *testing.T, scope, key, owner, outcome string) int64 {
	t.Helper()
	res, err := o.db.Exec(o.sql(oldComplete), micros(time.Hour), []byte(outcome), scope, key, owner)
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	return n
}

// TestRollingDeployFrom001: a rolling deploy from the code before
// migration 002. The table is at 001 and the old code claims, completes
// and replays; at 002 alone the old procedure calls fail (the break 003
// repairs); after the latest Migrate the old code's claim, replay,
// re-send, takeover, completion and Resolve all answer correctly again,
// on records the new code writes too (held ones included, reported
// pending), while the new code, in both claim modes, works on the same
// table, and old and new callers racing for one key claim it once.
func TestRollingDeployFrom001(t *testing.T) {
	db := newDB(t, nil)
	ctx := context.Background()
	table := "once_roll_" + randomSuffix()
	created = append(created, table)
	ms, err := loadMigrations(table)
	require.NoError(t, err)
	migrateTo := func(version int) {
		t.Helper()
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		defer func() { _ = conn.Close() }()
		n := 0
		for n < len(ms) && ms[n].version <= version {
			n++
		}
		require.NoError(t, migrateConn(ctx, conn, table, ms[:n]))
	}
	old := oldCode{db: db, table: table}
	scope := backendtest.Scope(t)
	owner := backendtest.Token

	// Schema 001, the old code alone.
	migrateTo(1)
	a := owner()
	r, err := old.claim(t, scope, "a", a, time.Minute)
	require.NoError(t, err)
	require.True(t, r.done)
	require.EqualValues(t, 1, old.complete(t, scope, "a", a, "va"))

	// Schema 002 alone: the old calls fail.
	migrateTo(2)
	_, err = old.claim(t, scope, "a", owner(), time.Minute)
	require.Error(t, err, "002 changed the claim's row under its name")

	// The latest schema, migrated by the new code.
	s := newTableStore(t, db, table, Config{})
	require.NoError(t, s.Migrate(ctx))
	oneCall := newTableStore(t, db, table, Config{OneRoundTripClaims: true})

	// The old code: a replay of what it wrote before the migrations.
	r, err = old.claim(t, scope, "a", owner(), time.Minute)
	require.NoError(t, err)
	require.Equal(t, oldRow{state: 2, fp: []byte("fp"), outcome: []byte("va"), leaseUS: sql.NullInt64{Valid: true}}, r)

	// A new claim, its re-send, a duplicate, its completion and replay.
	b := owner()
	r, err = old.claim(t, scope, "b", b, time.Minute)
	require.NoError(t, err)
	require.True(t, r.done && !r.tookOver, "%+v", r)
	r, err = old.claim(t, scope, "b", b, time.Minute)
	require.NoError(t, err)
	require.True(t, r.done, "a re-send is claimed")
	r, err = old.claim(t, scope, "b", owner(), time.Minute)
	require.NoError(t, err)
	require.False(t, r.done)
	require.EqualValues(t, 1, r.state)
	require.Greater(t, r.leaseUS.Int64, int64(0))
	require.EqualValues(t, 1, old.complete(t, scope, "b", b, "vb"))
	r, err = old.claim(t, scope, "b", owner(), time.Minute)
	require.NoError(t, err)
	require.Equal(t, []byte("vb"), r.outcome)
	require.EqualValues(t, 2, r.state)

	// A lapsed lease is taken over.
	_, err = old.claim(t, scope, "lapsed", owner(), time.Microsecond)
	require.NoError(t, err)
	r, err = old.claim(t, scope, "lapsed", owner(), time.Minute)
	require.NoError(t, err)
	require.True(t, r.done && r.tookOver, "%+v", r)

	// Resolve, its re-send, and another token's.
	c := owner()
	require.True(t, old.resolve(t, scope, "c", c, "vc").done)
	require.True(t, old.resolve(t, scope, "c", c, "vc").done, "a re-send is resolved")
	rr := old.resolve(t, scope, "c", owner(), "other")
	require.False(t, rr.done)
	require.Equal(t, []byte("vc"), rr.outcome)

	// The new code on the same table, in both claim modes, sees what the
	// old code wrote, and the old code sees what the new code writes.
	for _, st := range []*Store{s, oneCall} {
		for key, want := range map[string]string{"a": "va", "b": "vb", "c": "vc"} {
			res, err := st.Claim(ctx, claimParams(scope, key))
			require.NoError(t, err)
			require.Equal(t, []byte(want), res.Existing.Outcome, key)
			require.Greater(t, res.Existing.RetentionRemaining, 59*time.Minute, key)
		}
	}
	d := claimParams(scope, "d")
	res, err := oneCall.Claim(ctx, d)
	require.NoError(t, err)
	require.True(t, res.Claimed)
	r, err = old.claim(t, scope, "d", owner(), time.Minute)
	require.NoError(t, err)
	require.EqualValues(t, 1, r.state, "pending for the old code")
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "d", Owner: d.Owner, Outcome: []byte("vd"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	r, err = old.claim(t, scope, "d", owner(), time.Minute)
	require.NoError(t, err)
	require.Equal(t, []byte("vd"), r.outcome)

	// A key the new code holds is pending for the old code until the hold
	// ends; the old code's Complete by its former owner matches nothing,
	// its Resolve settles it, and the new code replays that.
	e := claimParams(scope, "e")
	res, err = s.Claim(ctx, e)
	require.NoError(t, err)
	require.True(t, res.Claimed)
	ok, err = s.Hold(ctx, backends.HoldParams{Scope: scope, Key: "e", Owner: e.Owner, For: time.Hour, Code: "timeout", Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	r, err = old.claim(t, scope, "e", owner(), time.Minute)
	require.NoError(t, err)
	require.False(t, r.done)
	require.EqualValues(t, 1, r.state, "held is pending for the old code")
	require.Greater(t, r.leaseUS.Int64, (59 * time.Minute).Microseconds(), "with the hold's time left")
	require.Zero(t, old.complete(t, scope, "e", e.Owner, "late"))
	rr = old.resolve(t, scope, "e", owner(), "ve")
	require.True(t, rr.done, "%+v", rr)
	res, err = oneCall.Claim(ctx, claimParams(scope, "e"))
	require.NoError(t, err)
	require.Equal(t, []byte("ve"), res.Existing.Outcome)

	// Old and new callers racing for one key: exactly one claims it.
	var claimed atomic.Int64
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			var done bool
			switch i % 3 {
			case 0:
				r, err := old.claim(t, scope, "race", owner(), time.Minute)
				assert.NoError(t, err)
				done = r.done
			case 1:
				res, err := s.Claim(ctx, claimParams(scope, "race"))
				assert.NoError(t, err)
				done = res.Claimed
			default:
				res, err := oneCall.Claim(ctx, claimParams(scope, "race"))
				assert.NoError(t, err)
				done = res.Claimed
			}
			if done {
				claimed.Add(1)
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, claimed.Load())
}

// newTableStore returns a Store on an existing table, closed at the end of
// tb.
func newTableStore(tb testing.TB, db *sql.DB, table string, cfg Config) *Store {
	tb.Helper()
	cfg.Table = table
	s, err := New(db, &cfg)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// TestRefuseLiveClaimNeedsMigration004: on schema 003 the code serves every
// call but a Resolve with RefuseLiveClaim, which fails with
// CodeNoSuchProcedure (never a Resolve that ignores the flag); Migrate
// makes it work.
func TestRefuseLiveClaimNeedsMigration004(t *testing.T) {
	db := newDB(t, nil)
	ctx := context.Background()
	table := "once_r004_" + randomSuffix()
	created = append(created, table)
	ms, err := loadMigrations(table)
	require.NoError(t, err)
	require.Equal(t, 4, ms[3].version)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	require.NoError(t, migrateConn(ctx, conn, table, ms[:3]))
	require.NoError(t, conn.Close())

	s := newTableStore(t, db, table, Config{})
	owner := backendtest.Token()
	r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	refusing := backends.ResolveParams{Scope: "s", Key: "k", Owner: backendtest.Token(), Outcome: []byte("v"), Retention: time.Hour, RefuseLiveClaim: true}
	_, err = s.Resolve(ctx, refusing)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, CodeNoSuchProcedure, e.Code)

	require.NoError(t, s.Migrate(ctx))
	res, err := s.Resolve(ctx, refusing)
	require.NoError(t, err)
	require.False(t, res.Resolved, "the live claim is left")
	require.Equal(t, backends.StatePending, res.Existing.State)
	applied, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "k", Owner: owner, Outcome: []byte("owner's"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, applied)
}

// TestOnlyLeasedNeedsMigration005: on schema 004 the code serves every
// call but a Resolve with OnlyLeased (a Reconciler's), which fails with
// CodeNoSuchProcedure (never a Resolve that ignores the fence); Migrate
// makes it work.
func TestOnlyLeasedNeedsMigration005(t *testing.T) {
	db := newDB(t, nil)
	ctx := context.Background()
	table := "once_r005_" + randomSuffix()
	created = append(created, table)
	ms, err := loadMigrations(table)
	require.NoError(t, err)
	require.Equal(t, 5, ms[4].version)
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	require.NoError(t, migrateConn(ctx, conn, table, ms[:4]))
	require.NoError(t, conn.Close())

	s := newTableStore(t, db, table, Config{})
	fenced := backends.ResolveParams{Scope: "s", Key: "k", Owner: backendtest.Token(), Outcome: []byte("v"), Retention: time.Hour, OnlyLeased: true}
	_, err = s.Resolve(ctx, fenced)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, CodeNoSuchProcedure, e.Code)

	require.NoError(t, s.Migrate(ctx))
	res, err := s.Resolve(ctx, fenced)
	require.NoError(t, err)
	require.False(t, res.Resolved, "an absent key is not written")
	require.Zero(t, res.Existing.State)
	r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed, "the key stayed absent")
}
