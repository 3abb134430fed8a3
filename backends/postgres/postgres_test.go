package postgres

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

func TestConformance(t *testing.T) {
	s := newStore(t, newPool(t, nil))
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

func TestConformanceSimpleProtocol(t *testing.T) {
	s := newStore(t, newPool(t, simpleProtocol))
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

func BenchmarkStore(b *testing.B) {
	s := newStore(b, newPool(b, nil))
	backendtest.Benchmark(b, func(testing.TB) backends.Store { return s })
}

func TestNewValidatesIdentifiers(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{Schema: "bad-name"}, "Schema"},
		{Config{Schema: `x"; DROP TABLE y; --`}, "Schema"},
		{Config{Table: "1abc"}, "Table"},
		{Config{Table: strings.Repeat("t", maxTableLen+1)}, "Table"},
		{Config{Schema: strings.Repeat("s", 64)}, "Schema"},
		{Config{Table: "é"}, "Table"},
	} {
		_, err := New(nil, &c.cfg)
		var ie *IdentifierError
		require.ErrorAs(t, err, &ie, "%+v", c.cfg)
		assert.Equal(t, c.field, ie.Field)
	}
	s, err := New(nil, nil)
	require.NoError(t, err)
	assert.Equal(t, `"public"."once_records"`, s.cfg.qualifiedTable())
	_, err = New(nil, &Config{Schema: "Mixed_Case_1", Table: strings.Repeat("t", maxTableLen)})
	require.NoError(t, err)
}

// TestStatementsPerOperation checks the round-trip floor: every Claim
// outcome in the order that suits it (a new key insert first, the others
// read first), Complete, Checkpoint and Release is one statement.
func TestStatementsPerOperation(t *testing.T) {
	c := &counter{}
	pool := newPool(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = c })
	s, first := newOrderedStore(t, pool, false), newOrderedStore(t, pool, true)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	claimOn := func(s *Store, key, owner string, fp string) backends.ClaimResult {
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Fingerprint: []byte(fp), Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		return r
	}
	claim := func(key, owner string, fp string) backends.ClaimResult { return claimOn(s, key, owner, fp) }
	var r backends.ClaimResult
	assert.EqualValues(t, 1, c.count(func() { r = claimOn(first, "k", "o1", "fp") }), "new")
	require.True(t, r.Claimed)
	assert.EqualValues(t, 1, c.count(func() { r = claim("k", "o2", "fp") }), "in progress")
	require.Equal(t, backends.StatePending, r.Existing.State)
	assert.EqualValues(t, 1, c.count(func() {
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: "o1", Outcome: []byte("v"), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	}), "complete")
	assert.EqualValues(t, 1, c.count(func() { r = claim("k", "o3", "fp") }), "replay")
	require.Equal(t, []byte("v"), r.Existing.Outcome)
	assert.EqualValues(t, 1, c.count(func() { r = claim("k", "o4", "other") }), "mismatch")
	require.Equal(t, []byte("fp"), r.Existing.Fingerprint)

	require.True(t, claim("steps", "o5", "fp").Claimed)
	assert.EqualValues(t, 1, c.count(func() {
		ok, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: "steps", Owner: "o5", Steps: []byte("s")})
		require.NoError(t, err)
		require.True(t, ok)
	}), "checkpoint")
	assert.EqualValues(t, 1, c.count(func() { r = claim("steps", "o5", "fp") }), "a re-sent claim, with its steps")
	require.Equal(t, []byte("s"), r.Steps)
	for _, key := range []string{"steps", "k2"} {
		if key == "k2" {
			require.True(t, claimOn(first, key, "o5", "fp").Claimed)
		}
		assert.EqualValues(t, 1, c.count(func() {
			ok, err := s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: key, Owner: "o5"})
			require.NoError(t, err)
			require.True(t, ok)
		}), "release of %s", key)
	}
}

// TestReplayWritesNothing checks that replaying a completed record takes no
// row lock and writes nothing: the row's xmin never changes, a replay
// succeeds while another transaction holds the row FOR UPDATE, and the WAL
// position does not move across replays. Read first and insert first,
// whose replay is a conflicting insert, then a read.
func TestReplayWritesNothing(t *testing.T) {
	for _, o := range claimOrders {
		t.Run(o.name, func(t *testing.T) { testReplayWritesNothing(t, o.insertFirst) })
	}
}

func testReplayWritesNothing(t *testing.T, insertFirst bool) {
	pool := newPool(t, nil)
	s := newOrderedStore(t, pool, insertFirst)
	var err error
	ctx := context.Background()
	scope := backendtest.Scope(t)
	p := backends.ClaimParams{Scope: scope, Key: "hot", Owner: "o", Fingerprint: []byte("fp"), Lease: time.Minute, Retention: time.Hour}
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "hot", Owner: "o", Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)

	xmin := func() string {
		var x string
		require.NoError(t, pool.QueryRow(ctx, "SELECT xmin::text FROM "+s.cfg.qualifiedTable()+" WHERE scope = $1 AND key = 'hot'", scope).Scan(&x))
		return x
	}
	replay := func(ctx context.Context) error {
		p.Owner = backendtest.Token()
		r, err := s.Claim(ctx, p)
		if err == nil && r.Existing.State != backends.StateCompleted {
			return errors.New("not a replay")
		}
		return err
	}
	before := xmin()
	for range 100 {
		require.NoError(t, replay(ctx))
	}
	assert.Equal(t, before, xmin(), "a replay must not rewrite the row")

	// Another transaction locks the row; replays must not wait for it.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, "SELECT 1 FROM "+s.cfg.qualifiedTable()+" WHERE scope = $1 AND key = 'hot' FOR UPDATE", scope)
	require.NoError(t, err)
	for range 10 {
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		require.NoError(t, replay(short), "a replay must not wait for a row lock")
		cancel()
	}
	require.NoError(t, tx.Rollback(ctx))

	// No WAL: other sessions of the server (other packages' tests, in
	// CI) may write in between, so one clean window out of many short
	// ones is enough; a replay that wrote would dirty every one.
	lsn := func() string {
		var l string
		require.NoError(t, pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&l))
		return l
	}
	clean := false
	for range 40 {
		from := lsn()
		for range 10 {
			require.NoError(t, replay(ctx))
		}
		if lsn() == from {
			clean = true
			break
		}
	}
	assert.True(t, clean, "replays moved the WAL position on every attempt")
}

func TestSweep(t *testing.T) {
	c := &counter{}
	pool := newPool(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = c })
	s := newTable(t, pool, Config{})
	ctx := context.Background()
	table := s.cfg.qualifiedTable()
	// 2500 expired rows (completed and pending) and 10 live ones.
	_, err := pool.Exec(ctx, `INSERT INTO `+table+` (scope, key, state, owner, lease_until, outcome, expires_at)
		SELECT 's', 'expired' || i, 1 + i % 2,
			CASE WHEN i % 2 = 0 THEN 'o' END, CASE WHEN i % 2 = 0 THEN now() END,
			CASE WHEN i % 2 = 1 THEN '\x'::bytea END,
			clock_timestamp() - interval '1 second'
		FROM generate_series(1, 2500) i`)
	require.NoError(t, err)
	for i := range 10 {
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "live" + string(rune('a'+i)), Owner: "o", Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
	}
	var n int64
	statements := c.count(func() {
		n, err = s.Sweep(ctx)
		require.NoError(t, err)
	})
	assert.EqualValues(t, 2500, n)
	assert.EqualValues(t, 3, statements, "batches of 1000, 1000 and 500 in the table's one chunk of pages")
	var left int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&left))
	assert.Equal(t, 10, left, "live rows stay")
	n, err = s.Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

func TestRunSweeperStopsWithContext(t *testing.T) {
	pool := newPool(t, nil)
	var sweepErrs []error
	s := newTable(t, pool, Config{OnSweepError: func(err error) { sweepErrs = append(sweepErrs, err) }})
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO `+s.cfg.qualifiedTable()+` (scope, key, state, outcome, expires_at)
		VALUES ('s', 'k', 2, '\x', clock_timestamp() - interval '1 second')`)
	require.NoError(t, err)
	runCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = s.RunSweeper(runCtx, 20*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, sweepErrs)
	var left int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM "+s.cfg.qualifiedTable()).Scan(&left))
	assert.Zero(t, left)
}

func TestMigrateConcurrently(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	cfg := &Config{Schema: "once_mig_" + randomSuffix()}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{cfg.Schema}.Sanitize()+" CASCADE")
	})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			s, err := New(pool, cfg)
			if err == nil {
				err = s.Migrate(ctx)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	s, err := New(pool, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx), "running again is a no-op")
	var versions []int32
	rows, err := pool.Query(ctx, "SELECT version FROM "+pgx.Identifier{cfg.Schema, DefaultTable + "_migrations"}.Sanitize())
	require.NoError(t, err)
	versions, err = pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	assert.Equal(t, []int32{1}, versions)
	indexes := func() []string {
		rows, err := pool.Query(ctx, "SELECT indexname::text FROM pg_indexes WHERE schemaname = $1 ORDER BY 1", cfg.Schema)
		require.NoError(t, err)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return names
	}
	assert.Equal(t, []string{"once_records_held_idx", "once_records_migrations_pkey", "once_records_pkey"}, indexes())

	// The down migration of Migrations, rendered the same way, undoes it.
	r, err := resolveConfig(cfg)
	require.NoError(t, err)
	down, err := fsReadFile(Migrations(), "001_create_records.down.sql")
	require.NoError(t, err)
	_, err = pool.Exec(ctx, renderer(r).Replace(down))
	require.NoError(t, err)
	var exists bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", cfg.Schema+".once_records").Scan(&exists))
	assert.False(t, exists)
}

func fsReadFile(f fs.FS, name string) (string, error) {
	b, err := fs.ReadFile(f, name)
	return string(b), err
}

func TestMigrationsFS(t *testing.T) {
	up, err := fsReadFile(Migrations(), "001_create_records.up.sql")
	require.NoError(t, err)
	assert.Contains(t, up, placeholderTable)
	assert.Contains(t, up, placeholderHeldIndex)
	_, err = fsReadFile(Migrations(), "001_create_records.down.sql")
	require.NoError(t, err)
}

// TestErrorsLeakNothing checks that driver errors are translated: a server
// error keeps its SQLSTATE but neither the driver's types nor the values
// involved, and context errors stay recognisable.
func TestErrorsLeakNothing(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	ctx := context.Background()
	// A constraint the row breaks: the server's error (SQLSTATE 23514)
	// quotes the row, owner included, in its detail.
	_, err := pool.Exec(ctx, "ALTER TABLE "+s.cfg.qualifiedTable()+" ADD CONSTRAINT no_secret CHECK (owner NOT LIKE 'secret%')")
	require.NoError(t, err)
	_, err = s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k-" + randomSuffix(), Owner: "secret-value", Lease: time.Minute, Retention: time.Hour})
	require.Error(t, err)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "claim", e.Op)
	assert.Equal(t, "23514", e.Code)
	assert.Equal(t, "no_secret", e.Constraint)
	assert.NotContains(t, err.Error(), "secret-value")
	assert.NotContains(t, err.Error(), "invalid input", "the server's error, not the store's check")
	var pgErr *pgconn.PgError
	assert.False(t, errors.As(err, &pgErr), "no pgconn error is reachable")

	_, err = s.Claim(ctx, backends.ClaimParams{Scope: strings.Repeat("s", 300), Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "claim", e.Op)
	assert.Contains(t, err.Error(), "invalid input: scope")
	assert.NotContains(t, err.Error(), "sss")
	// Scopes and keys no record can have are refused before the server
	// sees them, naming the field and not the value.
	for _, key := range []string{"secret\x00", "secret\xff", "secret\t"} {
		_, err = s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: key, Owner: "o", Lease: time.Minute, Retention: time.Hour})
		require.ErrorAs(t, err, &e, "%q", key)
		assert.Contains(t, err.Error(), "invalid input: key", "%q", key)
		assert.NotContains(t, err.Error(), "secret")
		_, err = s.Claim(ctx, backends.ClaimParams{Scope: key, Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
		require.ErrorAs(t, err, &e, "%q", key)
		assert.Contains(t, err.Error(), "invalid input: scope", "%q", key)
	}
	for _, err := range []error{
		func() error {
			_, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "", Owner: "o"})
			return err
		}(),
		func() error {
			_, err := s.Renew(ctx, backends.RenewParams{Scope: "s", Key: "k", Owner: strings.Repeat("o", 256)})
			return err
		}(),
		func() error {
			_, err := s.Resolve(ctx, backends.ResolveParams{Scope: "s", Key: "k", Fingerprint: make([]byte, 65)})
			return err
		}(),
		func() error {
			_, err := s.Release(ctx, backends.ReleaseParams{Scope: "", Key: "k", Owner: "o"})
			return err
		}(),
		func() error {
			_, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: "s", Key: "k", Owner: "", Steps: []byte("s")})
			return err
		}(),
	} {
		require.ErrorAs(t, err, &e)
		assert.Contains(t, err.Error(), "invalid input")
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Complete(cancelled, backends.CompleteParams{Scope: "s", Key: "k", Owner: "o"})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorAs(t, err, &e)

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = pool.Exec(short, "SELECT pg_sleep(1)")
	_, err = interpretError("claim", err)
	require.ErrorIs(t, err, context.DeadlineExceeded)

}

// TestUnmigratedTableNamesMigrate: a Store whose table was never migrated
// fails every call with an *Error of SQLSTATE 42P01 that says to run
// Migrate; it said only "server error (SQLSTATE 42P01)".
func TestUnmigratedTableNamesMigrate(t *testing.T) {
	missing, err := New(newPool(t, nil), &Config{Schema: testSchema, Table: "no_such_table"})
	require.NoError(t, err)
	_, err = missing.Claim(t.Context(), backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Minute, Retention: time.Hour})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, CodeUndefinedTable, e.Code)
	assert.Equal(t, "once/postgres: claim: records table missing: run Store.Migrate (SQLSTATE 42P01)", err.Error())
}

// TestConcurrentTakeover races many claimers on one expired lease: exactly
// one takes it over.
func TestConcurrentTakeover(t *testing.T) {
	s := newStore(t, newPool(t, nil))
	ctx := context.Background()
	scope := backendtest.Scope(t)
	for round := range 5 {
		key := "k" + string(rune('a'+round))
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: "stale", Lease: time.Millisecond, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		backendtest.Elapse(t, s, time.Millisecond)
		var wg sync.WaitGroup
		var mu sync.Mutex
		winners := 0
		for range 16 {
			wg.Go(func() {
				r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
				if assert.NoError(t, err) && r.Claimed {
					assert.True(t, r.TookOver)
					mu.Lock()
					winners++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 1, winners)
	}
}
