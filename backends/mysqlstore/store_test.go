package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

func claimParams(scope, key string) backends.ClaimParams {
	return backends.ClaimParams{Scope: scope, Key: key, Owner: backendtest.Token(), Fingerprint: []byte("fp"), Lease: time.Minute, Retention: time.Hour}
}

func TestNewValidatesIdentifiers(t *testing.T) {
	for _, table := range []string{
		"bad-name", "x`; DROP TABLE y; --", "1abc", strings.Repeat("t", maxTableLen+1), "é", "a b",
	} {
		_, err := New(nil, &Config{Table: table})
		var ie *IdentifierError
		require.ErrorAs(t, err, &ie, "%q", table)
		require.Equal(t, "Table", ie.Field)
	}
	s, err := New(nil, nil)
	require.NoError(t, err)
	require.Equal(t, DefaultTable, s.cfg.table)
	require.Contains(t, s.sql.claim, "CALL `once_records_call_v1`(")
	s, err = New(nil, &Config{Table: strings.Repeat("t", maxTableLen)})
	require.NoError(t, err)
	require.Contains(t, s.sql.claim, "CALL `"+strings.Repeat("t", maxTableLen)+"_call_v1`(")
	require.Contains(t, s.sql.resolve, "CALL `"+strings.Repeat("t", maxTableLen)+"_call_v1`(")
	require.NotContains(t, s.sql.complete, "once_records")
}

func TestLockTimeoutSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int64{
		time.Nanosecond: 1, time.Second: 1, 1500 * time.Millisecond: 2, time.Hour: 3600,
		math.MaxInt64: maxLockWaitS,
	} {
		require.Equal(t, want, seconds(d), "%v", d)
	}
}

// TestInputErrors: oversized values, and scopes and keys no record can
// have, are refused with a typed error before anything is sent, instead
// of being truncated by INSERT IGNORE (the columns are VARBINARY: a name
// no record can have would be stored as given, and no List cursor could
// name it).
func TestInputErrors(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	ctx := context.Background()
	long := strings.Repeat("x", 256)
	for _, c := range []struct {
		field string
		p     backends.ClaimParams
	}{
		{"Scope", backends.ClaimParams{Scope: long, Key: "k", Owner: "o"}},
		{"Scope", backends.ClaimParams{Key: "k", Owner: "o"}},
		{"Key", backends.ClaimParams{Scope: "s", Key: long, Owner: "o"}},
		{"Fingerprint", backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Fingerprint: make([]byte, 65)}},
		{"Owner", backends.ClaimParams{Scope: "s", Key: "k", Owner: long}},
		{"Owner", backends.ClaimParams{Scope: "s", Key: "k"}},
		{"Key", backends.ClaimParams{Scope: "s", Key: "k\xff", Owner: "o"}},
		{"Key", backends.ClaimParams{Scope: "s", Key: "k\x00", Owner: "o"}},
		{"Scope", backends.ClaimParams{Scope: "s\t", Key: "k", Owner: "o"}},
	} {
		_, err := s.Claim(ctx, c.p)
		var ie *InputError
		require.ErrorAs(t, err, &ie)
		require.Equal(t, c.field, ie.Field)
	}
	_, err := s.Resolve(ctx, backends.ResolveParams{Scope: "s", Key: "k", Owner: long})
	var ie *InputError
	require.ErrorAs(t, err, &ie)
}

// TestRoundTrips checks the round trips by counting the commands the
// driver sends, once the statements are prepared on the connection: every
// Claim answer is one with the procedure; inserting first, a new claim is
// one (the insert) and every other answer two (insert, read); reading
// first, a new claim is two (read, insert) and every other answer one;
// Complete, Renew, Release and Resolve are one each.
func TestRoundTrips(t *testing.T) {
	t.Run("insert-first", func(t *testing.T) { testRoundTrips(t, Config{}, 1, 2) })
	t.Run("read-first", func(t *testing.T) { testRoundTrips(t, Config{ReadFirstClaims: true}, 2, 1) })
	t.Run("procedure", func(t *testing.T) { testRoundTrips(t, Config{OneRoundTripClaims: true}, 1, 1) })
}

func testRoundTrips(t *testing.T, cfg Config, newClaim, existing int64) {
	c := &counter{}
	db := newDB(t, func(cfg *mysql.Config) { cfg.DialFunc = c.dial })
	db.SetMaxOpenConns(1)
	s := newStore(t, db, cfg)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	claim := func(key, owner, fp string) backends.ClaimResult {
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Fingerprint: []byte(fp), Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		return r
	}
	complete := func(key, owner string) bool {
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
		require.NoError(t, err)
		return ok
	}
	// Warm up: prepare every statement on the one connection.
	claim("warm", "w", "fp")
	claim("warm", "w2", "fp") // the read of an existing key
	complete("warm", "w")
	complete("warm", "w")
	_, err := s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "warm", Owner: "w", Lease: time.Minute})
	require.NoError(t, err)
	_, err = s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "warm", Owner: "w"})
	require.NoError(t, err)
	_, err = s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "warm-r", Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)

	var r backends.ClaimResult
	require.EqualValues(t, newClaim, c.count(func() { r = claim("k", "o1", "fp") }), "new")
	require.True(t, r.Claimed)
	require.EqualValues(t, existing, c.count(func() { r = claim("k", "o2", "fp") }), "in progress")
	require.Equal(t, backends.StatePending, r.Existing.State)
	require.EqualValues(t, 1, c.count(func() {
		ok, err := s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "k", Owner: "o1", Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
	}), "renew")
	require.EqualValues(t, 1, c.count(func() { require.True(t, complete("k", "o1")) }), "complete")
	require.EqualValues(t, existing, c.count(func() { r = claim("k", "o3", "fp") }), "replay")
	require.Equal(t, backends.StateCompleted, r.Existing.State)
	require.EqualValues(t, existing, c.count(func() { r = claim("k", "o4", "other") }), "mismatch")
	require.Equal(t, []byte("fp"), r.Existing.Fingerprint)
	require.EqualValues(t, 2, c.count(func() { require.True(t, complete("k", "o1")) }), "a re-sent complete: the update, then the check")
	claim("rel", "o5", "")
	require.EqualValues(t, 1, c.count(func() {
		ok, err := s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "rel", Owner: "o5"})
		require.NoError(t, err)
		require.True(t, ok)
	}), "release")
	require.EqualValues(t, 1, c.count(func() {
		res, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "res", Owner: "r", Outcome: []byte("v"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, res.Resolved)
	}), "resolve")
}

// TestReplayWritesNothing checks that a replay and an in-progress answer
// leave the row untouched (its revision does not move).
func TestReplayWritesNothing(t *testing.T) {
	t.Run("insert-first", func(t *testing.T) { testReplayWritesNothing(t, Config{}) })
	t.Run("read-first", func(t *testing.T) { testReplayWritesNothing(t, Config{ReadFirstClaims: true}) })
	t.Run("procedure", func(t *testing.T) { testReplayWritesNothing(t, Config{OneRoundTripClaims: true}) })
}

func testReplayWritesNothing(t *testing.T, cfg Config) {
	db := newDB(t, nil)
	s := newStore(t, db, cfg)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	revision := func(key string) int64 {
		var rev int64
		require.NoError(t, db.QueryRowContext(ctx, "SELECT revision FROM "+quote(testTable)+" WHERE scope = ? AND `key` = ?", scope, key).Scan(&rev))
		return rev
	}
	p := claimParams(scope, "k")
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	before := revision("k")
	for range 3 {
		r, err = s.Claim(ctx, claimParams(scope, "k"))
		require.NoError(t, err)
		require.False(t, r.Claimed)
	}
	require.Equal(t, before, revision("k"), "in progress")
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	before = revision("k")
	for range 3 {
		r, err = s.Claim(ctx, claimParams(scope, "k"))
		require.NoError(t, err)
		require.Equal(t, []byte("v"), r.Existing.Outcome)
	}
	require.Equal(t, before, revision("k"), "replay")
}

// TestExtremeDurations: the longest time.Duration is "that long" (about 292
// years, inside DATETIME's range), never a wrapped short value, for the
// lease, the retention, a renewal and a completion; a tiny one is at least a
// microsecond.
func TestExtremeDurations(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	ctx := context.Background()
	scope := backendtest.Scope(t)
	const huge = time.Duration(math.MaxInt64)
	const longerThan = 290 * 365 * 24 * time.Hour

	p := backends.ClaimParams{Scope: scope, Key: "huge", Owner: "o", Lease: huge, Retention: time.Nanosecond}
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	rec, err := s.Get(ctx, scope, "huge")
	expiresIn := rec.ExpiresIn
	found := rec.State != 0
	require.NoError(t, err)
	require.True(t, found)
	require.Greater(t, rec.LeaseRemaining, longerThan)
	require.GreaterOrEqual(t, expiresIn, rec.LeaseRemaining, "a pending record lives at least as long as its lease")

	ok, err := s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "huge", Owner: "o", Lease: huge})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "huge", Owner: "o", Lease: huge})
	require.NoError(t, err)
	require.True(t, ok, "a renewal that changes no deadline still applies")
	ok, err = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "huge", Owner: "o", Outcome: []byte("v"), Retention: huge})
	require.NoError(t, err)
	require.True(t, ok)
	rec, err = s.Get(ctx, scope, "huge")
	require.NoError(t, err)
	require.Equal(t, backends.StateCompleted, rec.State)
	require.Greater(t, rec.ExpiresIn, longerThan)

	res, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "resolved", Outcome: []byte("v"), Retention: huge})
	require.NoError(t, err)
	require.True(t, res.Resolved)
	rec, err = s.Get(ctx, scope, "resolved")
	require.NoError(t, err)
	require.Greater(t, rec.ExpiresIn, longerThan)

	// Tiny: one nanosecond rounds up to a microsecond, which has passed by
	// the next statement.
	r, err = s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "tiny", Owner: "a", Lease: time.Nanosecond, Retention: time.Nanosecond})
	require.NoError(t, err)
	require.True(t, r.Claimed)
	backendtest.Elapse(t, s, time.Nanosecond)
	r, err = s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "tiny", Owner: "b", Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, r.Claimed)
}

// TestDeadlineGuardSaturates: the guard every deadline goes through turns
// a sum past DATETIME's range (NULL on the server) into its maximum. The
// server's clock cannot be moved that far ahead, so the guard is checked on
// a date near the end of the range.
func TestDeadlineGuardSaturates(t *testing.T) {
	db := newDB(t, nil)
	var saturated, fits string
	guard := "COALESCE(CAST(? AS DATETIME(6)) + INTERVAL ? MICROSECOND, " + maxDatetime + ")"
	require.NoError(t, db.QueryRow("SELECT "+guard, "9990-01-01", sqlstore.Micros(math.MaxInt64)).Scan(&saturated))
	require.Equal(t, "9999-12-31 23:59:59.999999", saturated)
	require.NoError(t, db.QueryRow("SELECT "+guard, "2026-01-01", sqlstore.Micros(math.MaxInt64)).Scan(&fits))
	require.True(t, strings.HasPrefix(fits, "2318-"), "the longest duration from today fits: %s", fits)
}

// TestLockWaitRestored: the claim procedure restores the session's
// innodb_lock_wait_timeout on every path, the error path included.
func TestLockWaitRestored(t *testing.T) {
	db := newDB(t, nil)
	db.SetMaxOpenConns(1)
	s := newStore(t, db, Config{LockTimeout: 3 * time.Second})
	ctx := context.Background()
	_, err := db.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 17")
	require.NoError(t, err)
	wait := func() int {
		var n int
		require.NoError(t, db.QueryRowContext(ctx, "SELECT @@SESSION.innodb_lock_wait_timeout").Scan(&n))
		return n
	}
	scope := backendtest.Scope(t)
	_, err = s.Claim(ctx, claimParams(scope, "k"))
	require.NoError(t, err)
	require.Equal(t, 17, wait(), "after a claim")
	_, err = s.Claim(ctx, claimParams(scope, "k"))
	require.NoError(t, err)
	require.Equal(t, 17, wait(), "after a duplicate")
	_, err = s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "k", Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.Equal(t, 17, wait(), "after a resolve")
}

func TestMissingTable(t *testing.T) {
	db := newDB(t, nil)
	s, err := New(db, &Config{Table: "once_missing_" + randomSuffix()})
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	_, err = s.Claim(context.Background(), claimParams(backendtest.Scope(t), "k"))
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Contains(t, []uint16{CodeNoSuchTable, CodeNoSuchProcedure}, e.Code)
	require.Equal(t, "claim", e.Op)
	require.Contains(t, e.Error(), "run Migrate")
}

func TestClosedStore(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	ctx := context.Background()
	_, err := s.Claim(ctx, claimParams(backendtest.Scope(t), "k"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Claim(ctx, claimParams(backendtest.Scope(t), "k"))
	require.ErrorIs(t, err, backends.ErrClosed)
	var e *Error
	require.ErrorAs(t, err, &e)
}

func TestClosedDB(t *testing.T) {
	db := newDB(t, nil)
	s := newStore(t, db, Config{})
	_, err := s.Claim(context.Background(), claimParams(backendtest.Scope(t), "k"))
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = s.Claim(context.Background(), claimParams(backendtest.Scope(t), "k"))
	require.ErrorIs(t, err, backends.ErrClosed)
	var e *Error
	require.ErrorAs(t, err, &e)
}

func TestCancelledContextIsTyped(t *testing.T) {
	s := newStore(t, newDB(t, nil), Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Claim(ctx, claimParams(backendtest.Scope(t), "k"))
	require.ErrorIs(t, err, context.Canceled)
	var e *Error
	require.ErrorAs(t, err, &e)
	var myErr *mysql.MySQLError
	require.False(t, errors.As(err, &myErr), "no driver error escapes")
}

// TestMigrate: Migrate is idempotent and safe to run concurrently, and the
// exported files hold the same statements.
func TestMigrate(t *testing.T) {
	db := newDB(t, nil)
	table := "once_m_" + randomSuffix()
	created = append(created, table)
	s, err := New(db, &Config{Table: table})
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for range 3 {
		wg.Go(func() { errs <- s.Migrate(context.Background()) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.Migrate(context.Background()), "again: a no-op")
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+quote(table+"_migrations")).Scan(&n))
	require.Equal(t, 1, n)
	r, err := s.Claim(context.Background(), claimParams("s", "k"))
	require.NoError(t, err)
	require.True(t, r.Claimed)

	names, err := fs.Glob(Migrations(), "*.sql")
	require.NoError(t, err)
	require.Equal(t, []string{"001_create_records.down.sql", "001_create_records.up.sql"}, names)
	up, err := fs.ReadFile(Migrations(), "001_create_records.up.sql")
	require.NoError(t, err)
	require.Contains(t, string(up), "CREATE PROCEDURE `once_records_call_v1`")
	ms, err := loadMigrations(table)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	require.Len(t, ms[0].statements, 3, "table, and drop+create of the procedure")
	for _, m := range ms {
		for _, stmt := range m.statements {
			require.NotContains(t, stmt, "`once_records", "every name is renamed")
		}
	}

	// The down migration removes everything.
	runMigrationFile(t, db, table, "001_create_records.down.sql")
	var procs int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME LIKE ?", table+"%").Scan(&procs))
	require.Zero(t, procs, "no procedure is left")
	_, err = s.Claim(context.Background(), claimParams("s", "k"))
	var e *Error
	require.ErrorAs(t, err, &e)
}

// runMigrationFile runs the statements of one embedded migration file on
// table.
func runMigrationFile(t *testing.T, db *sql.DB, table, name string) {
	t.Helper()
	b, err := fs.ReadFile(Migrations(), name)
	require.NoError(t, err)
	for _, stmt := range splitStatements(strings.NewReplacer(placeholderTable, "`"+table).Replace(string(b))) {
		_, err := db.Exec(stmt)
		require.NoError(t, err, "%s: %s", name, stmt)
	}
}

func TestSweep(t *testing.T) {
	db := newDB(t, nil)
	s := newTable(t, db, Config{SweepBatchSize: 2})
	ctx := context.Background()
	scope := backendtest.Scope(t)
	for _, key := range []string{"a", "b", "c", "d", "e"} {
		_, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: key, Outcome: []byte("v"), Retention: time.Millisecond})
		require.NoError(t, err)
	}
	_, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "live", Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	pending := claimParams(scope, "pending")
	pending.Lease, pending.Retention = time.Hour, time.Millisecond
	_, err = s.Claim(ctx, pending)
	require.NoError(t, err)
	backendtest.Elapse(t, s, time.Millisecond) // past the retentions
	n, err := s.Sweep(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 5, n, "in batches of 2: 2, 2, 1")
	var left int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+quote(s.cfg.table)).Scan(&left))
	require.Equal(t, 2, left, "the live record and the pending one whose lease outlives its retention")
	n, err = s.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestRunSweeperStopsWithContext(t *testing.T) {
	var mu sync.Mutex
	var errs []error
	s := newStore(t, newDB(t, nil), Config{OnSweepError: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.RunSweeper(ctx, 10*time.Millisecond), context.DeadlineExceeded)
	mu.Lock()
	defer mu.Unlock()
	require.Empty(t, errs)
}

// TestReplayTakesNoLock: a replay and an in-progress answer succeed while
// another transaction holds the row FOR UPDATE, so they take no row lock,
// reading first and with the procedure. Inserting first, the INSERT waits
// for the lock, at most LockTimeout, and the read after it still gives the
// right answer, never "in progress" for a completed key.
func TestReplayTakesNoLock(t *testing.T) {
	t.Run("read-first", func(t *testing.T) { testReplayTakesNoLock(t, Config{ReadFirstClaims: true}) })
	t.Run("procedure", func(t *testing.T) { testReplayTakesNoLock(t, Config{OneRoundTripClaims: true}) })
	t.Run("insert-first", func(t *testing.T) { testReplayTakesNoLock(t, Config{LockTimeout: time.Second}) })
}

func testReplayTakesNoLock(t *testing.T, cfg Config) {
	db := newDB(t, nil)
	s := newStore(t, db, cfg)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	done, busy := claimParams(scope, "done"), claimParams(scope, "busy")
	for _, p := range []backends.ClaimParams{done, busy} {
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
	}
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "done", Owner: done.Owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)

	tx, err := db.BeginTx(ctx, nil)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback() }()
	var n int
	require.NoError(t, tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quote(testTable)+" WHERE scope = ? FOR UPDATE", scope).Scan(&n))
	require.Equal(t, 2, n)

	// 3 s: within the bound lockSlack gives (4 s), far below the session's
	// innodb_lock_wait_timeout (50 s).
	short, cancel := context.WithTimeout(ctx, time.Duration(seconds(cfg.LockTimeout))*time.Second+3*time.Second)
	defer cancel()
	r, err := s.Claim(short, claimParams(scope, "done"))
	require.NoError(t, err, "a replay does not wait for the row lock")
	require.Equal(t, []byte("v"), r.Existing.Outcome)
	r, err = s.Claim(short, claimParams(scope, "busy"))
	require.NoError(t, err, "nor does an in-progress answer")
	require.Equal(t, backends.StatePending, r.Existing.State)
	rec, err := s.Get(short, scope, "done")
	require.NoError(t, err, "nor Get")
	require.Equal(t, backends.StateCompleted, rec.State)
	require.Equal(t, []byte("v"), rec.Outcome)
}
