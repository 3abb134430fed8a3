package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/txtest"
)

func claimParams(scope, key string) backends.ClaimParams {
	return backends.ClaimParams{Scope: scope, Key: key, Owner: backendtest.Token(), Fingerprint: []byte("fp"), Lease: time.Minute, Retention: time.Hour}
}

// TestClaimSeesRowCommittedAfterSnapshot forces the READ COMMITTED race: a
// Claim whose insert waits on a concurrent uncommitted claim, committed
// after the Claim's snapshot, must re-run and report that claim.
func TestClaimSeesRowCommittedAfterSnapshot(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	scope := backendtest.Scope(t)

	for _, name := range []string{"insert", "takeover"} {
		t.Run(name, func(t *testing.T) {
			key := name
			if name == "takeover" {
				p := claimParams(scope, key)
				p.Lease = time.Millisecond
				r, err := s.Claim(ctx, p)
				require.NoError(t, err)
				require.True(t, r.Claimed)
				backendtest.Elapse(t, s, p.Lease)
			}
			tx, err := pool.Begin(ctx)
			require.NoError(t, err)
			defer func() { _ = tx.Rollback(ctx) }()
			r, err := s.InTx(tx).Claim(ctx, claimParams(scope, key))
			require.NoError(t, err)
			require.True(t, r.Claimed)

			got := make(chan backends.ClaimResult, 1)
			go func() {
				r, err := s.Claim(ctx, claimParams(scope, key))
				assert.NoError(t, err)
				got <- r
			}()
			time.Sleep(200 * time.Millisecond) // the Claim blocks on the uncommitted row
			select {
			case r := <-got:
				t.Fatalf("claim did not wait for the uncommitted row: %+v", r)
			default:
			}
			require.NoError(t, tx.Commit(ctx))
			r = <-got
			assert.False(t, r.Claimed)
			assert.Equal(t, backends.StatePending, r.Existing.State)
			assert.Greater(t, r.Existing.LeaseRemaining, 50*time.Second)
		})
	}
}

// TestInTxLockTimeout checks the bounded wait of a Claim in a transaction
// for a concurrent uncommitted claim: past LockTimeout it reports the key in
// progress, leaves its transaction usable and restores lock_timeout.
func TestInTxLockTimeout(t *testing.T) {
	t.Run("extended", func(t *testing.T) { testInTxLockTimeout(t, newPool(t, nil)) })
	t.Run("simple", func(t *testing.T) { testInTxLockTimeout(t, newPool(t, simpleProtocol)) })
}

func testInTxLockTimeout(t *testing.T, pool *pgxpool.Pool) {
	ctx := context.Background()
	s, err := New(pool, &Config{Schema: testSchema, LockTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	scope := backendtest.Scope(t)

	first, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = first.Rollback(ctx) }()
	r, err := s.InTx(first).Claim(ctx, claimParams(scope, "k"))
	require.NoError(t, err)
	require.True(t, r.Claimed)

	second, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = second.Rollback(ctx) }()
	_, err = second.Exec(ctx, "SET LOCAL lock_timeout = '7s'")
	require.NoError(t, err)
	start := time.Now()
	p := claimParams(scope, "k")
	r, err = s.InTx(second).Claim(ctx, p)
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.False(t, r.Claimed)
	assert.Equal(t, backends.StatePending, r.Existing.State)
	assert.Equal(t, lockTimeoutHint, r.Existing.LeaseRemaining)
	assert.Equal(t, p.Fingerprint, r.Existing.Fingerprint)

	var lt string
	require.NoError(t, second.QueryRow(ctx, "SHOW lock_timeout").Scan(&lt), "the transaction is still usable")
	assert.Equal(t, "7s", lt, "lock_timeout is restored")

	// Once the first commits, the second sees its claim.
	require.NoError(t, first.Commit(ctx))
	r, err = s.InTx(second).Claim(ctx, claimParams(scope, "k"))
	require.NoError(t, err)
	assert.False(t, r.Claimed)
	assert.Greater(t, r.Existing.LeaseRemaining, 50*time.Second)
	require.NoError(t, second.QueryRow(ctx, "SHOW lock_timeout").Scan(&lt))
	assert.Equal(t, "7s", lt)
}

// TestInTxConformance runs the suite on InTx stores, each operation in a
// transaction of its own, so the suite's cross-call expectations hold.
func TestInTxConformance(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	backendtest.Run(t, func(testing.TB) backends.Store { return &autoTx{pool: pool, s: s} })
}

func TestInTxConformanceSimpleProtocol(t *testing.T) {
	pool := newPool(t, simpleProtocol)
	s := newStore(t, pool)
	backendtest.Run(t, func(testing.TB) backends.Store { return &autoTx{pool: pool, s: s} })
}

// autoTx runs each operation of s.InTx in a transaction of its own.
type autoTx struct {
	pool *pgxpool.Pool
	s    *Store
}

func inTx[R any](ctx context.Context, a *autoTx, fn func(backends.Store) (R, error)) (R, error) {
	var r R
	err := pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		var err error
		r, err = fn(a.s.InTx(tx))
		return err
	})
	return r, err
}

func (a *autoTx) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	return inTx(ctx, a, func(s backends.Store) (backends.ClaimResult, error) { return s.Claim(ctx, p) })
}

func (a *autoTx) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Complete(ctx, p) })
}

func (a *autoTx) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Renew(ctx, p) })
}

func (a *autoTx) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Release(ctx, p) })
}

func (a *autoTx) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Checkpoint(ctx, p) })
}

func (a *autoTx) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	return inTx(ctx, a, func(s backends.Store) (backends.ResolveResult, error) { return s.Resolve(ctx, p) })
}

func (a *autoTx) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	return inTx(ctx, a, func(s backends.Store) (bool, error) { return s.Hold(ctx, p) })
}

func (a *autoTx) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return inTx(ctx, a, func(s backends.Store) (backends.LeaseHeldResult, error) { return s.LeaseHeld(ctx, p) })
}

// effects creates a table of side effects for one test.
func effects(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	table := pgx.Identifier{testSchema, "effects_" + randomSuffix()}.Sanitize()
	_, err := pool.Exec(context.Background(), "CREATE TABLE "+table+" (key text NOT NULL, n int NOT NULL)")
	require.NoError(t, err)
	return table
}

func countRows(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), sql, args...).Scan(&n))
	return n
}

// TestDoTx runs the transactional mode's cases (internal/txtest) on
// BeginTx, under pgx's extended and simple protocols.
func TestDoTx(t *testing.T) {
	t.Run("extended", func(t *testing.T) {
		txtest.Run(t, func(t *testing.T) txtest.Store[pgx.Tx] { return txStoreUnderTest(t, nil) })
	})
	t.Run("simple", func(t *testing.T) {
		txtest.Run(t, func(t *testing.T) txtest.Store[pgx.Tx] { return txStoreUnderTest(t, simpleProtocol) })
	})
}

func txStoreUnderTest(t *testing.T, configure func(*pgxpool.Config)) txtest.Store[pgx.Tx] {
	pool := newPool(t, func(cfg *pgxpool.Config) {
		cfg.MaxConns = 40
		if configure != nil {
			configure(cfg)
		}
	})
	s := newStore(t, pool)
	table := effects(t, pool)
	return txtest.Store[pgx.Tx]{
		Store: s,
		Begin: s.BeginTx,
		Effect: func(ctx context.Context, tx pgx.Tx, key string) error {
			_, err := tx.Exec(ctx, "INSERT INTO "+table+" (key, n) VALUES ($1, 1)", key)
			return err
		},
		Count: func(t *testing.T, key string) int {
			return countRows(t, pool, "SELECT count(*) FROM "+table+" WHERE key = $1", key)
		},
		Kill: func(t *testing.T, tx pgx.Tx) {
			var pid int32
			require.NoError(t, tx.QueryRow(context.Background(), "SELECT pg_backend_pid()").Scan(&pid))
			_, err := pool.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pid)
			require.NoError(t, err)
		},
		Duplicates: 32,
	}
}

// TestBeginTxOnASingleConnectionRefused: a Store over one connection
// cannot run a transaction beside its own statements.
func TestBeginTxOnASingleConnectionRefused(t *testing.T) {
	pool := newPool(t, nil)
	s, err := New(pool, &Config{Schema: testSchema, SingleConnection: true})
	require.NoError(t, err)
	_, _, err = s.BeginTx(context.Background())
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "begin", e.Op)
}

// TestStatementsPerDo counts the statements of whole once.Do calls on the
// pool store. Insert first: first execution 2 (insert, complete), replay,
// in progress and mismatch 2 (the insert, then read_claim.sql). Read
// first: first execution 3 (read, insert, complete), the others 1.
func TestStatementsPerDo(t *testing.T) {
	t.Run("insert first", func(t *testing.T) { testStatementsPerDo(t, true, 2, 2) })
	t.Run("read first", func(t *testing.T) { testStatementsPerDo(t, false, 3, 1) })
}

// testStatementsPerDo counts the statements of a once.Do at the wire:
// first for a first execution, others for a replay, a mismatch and an
// in-progress duplicate.
func testStatementsPerDo(t *testing.T, insertFirst bool, first, others int64) {
	c := &counter{}
	pool := newPool(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = c })
	s := newOrderedStore(t, pool, insertFirst)
	var err error
	name := backendtest.Scope(t)
	scope := once.New(s).Scope(name)
	ctx := context.Background()
	do := func(key, fp string) (string, error) {
		return once.Do(ctx, scope, key, once.Fingerprint(fp), func(context.Context) (string, error) { return "v", nil })
	}
	assert.EqualValues(t, first, c.count(func() { _, err = do("k", "fp") }), "first execution")
	require.NoError(t, err)
	assert.EqualValues(t, others, c.count(func() { _, err = do("k", "fp") }), "replay")
	require.NoError(t, err)
	assert.EqualValues(t, others, c.count(func() { _, err = do("k", "other") }), "mismatch")
	require.ErrorIs(t, err, once.ErrKeyReused)

	r, cerr := s.Claim(ctx, claimParams(name, "busy"))
	require.NoError(t, cerr)
	require.True(t, r.Claimed)
	assert.EqualValues(t, others, c.count(func() { _, err = do("busy", "fp") }), "in progress")
	require.ErrorIs(t, err, once.ErrInProgress)
}

// TestHandlerTx runs oncehttp.HandlerTx's cases (internal/txtest) on
// BeginTx: a handler's row and its stored response commit together.
func TestHandlerTx(t *testing.T) {
	txtest.RunHTTP(t, func(t *testing.T) txtest.Store[pgx.Tx] { return txStoreUnderTest(t, nil) })
}
