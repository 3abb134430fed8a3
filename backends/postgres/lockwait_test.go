package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// holdInTx claims (scope, key) in a transaction that stays open until the
// test ends, as an uncommitted DoTx does.
func holdInTx(t *testing.T, pool *pgxpool.Pool, s *Store, scope, key string) {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	r, err := s.InTx(tx).Claim(context.Background(), claimParams(scope, key))
	require.NoError(t, err)
	require.True(t, r.Claimed)
}

// TestClaimBoundedByUncommittedTx is issue 13 item 8: a plain Claim (and
// Resolve, and once.Do) on a key claimed inside an uncommitted
// transaction waits at most LockTimeout and reports the key in progress;
// it never blocks on the row lock for as long as the transaction lasts.
// Read first and insert first: the insert after the read is bounded by
// LockTimeout, the insert that goes first by 1 ms, then the read and
// insert of read first.
func TestClaimBoundedByUncommittedTx(t *testing.T) {
	for _, o := range claimOrders {
		t.Run(o.name, func(t *testing.T) { testClaimBoundedByUncommittedTx(t, o.insertFirst) })
	}
}

func testClaimBoundedByUncommittedTx(t *testing.T, insertFirst bool) {
	holderPool := newPool(t, nil)
	holder, err := New(holderPool, &Config{Schema: testSchema})
	require.NoError(t, err)
	// One connection, so that the lock_timeout check at the end reads the
	// very session the statements ran on.
	pool := newPool(t, func(cfg *pgxpool.Config) { cfg.MaxConns = 1 })
	s, err := New(pool, &Config{Schema: testSchema, LockTimeout: 100 * time.Millisecond})
	require.NoError(t, err)
	pinOrder(s, insertFirst)
	scope := backendtest.Scope(t)
	holdInTx(t, holderPool, holder, scope, "held")

	// The test's own deadline is far beyond LockTimeout: hitting it is
	// the bug (an unbounded wait), not a timing flake.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := s.Claim(ctx, claimParams(scope, "held"))
	require.NoError(t, err, "the claim waited for the uncommitted transaction")
	require.False(t, r.Claimed)
	require.Equal(t, backends.StatePending, r.Existing.State)
	require.Positive(t, r.Existing.LeaseRemaining)

	res, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "held", Outcome: []byte("v"), Retention: time.Hour, Owner: backendtest.Token()})
	require.NoError(t, err, "the resolve waited for the uncommitted transaction")
	require.False(t, res.Resolved)
	require.Equal(t, backends.StatePending, res.Existing.State)

	_, err = once.Do(ctx, once.New(s).Scope(scope), "held", once.Fingerprint("fp"), func(context.Context) (int, error) {
		t.Error("fn ran beside an uncommitted claim")
		return 0, nil
	})
	require.ErrorIs(t, err, once.ErrInProgress)
	require.NoError(t, ctx.Err())

	// The pool's connections come back with the server's lock_timeout.
	var lt string
	require.NoError(t, pool.QueryRow(ctx, "SHOW lock_timeout").Scan(&lt))
	require.Equal(t, "0", lt)
}

// TestLockTimeoutAnswerOwnsItsFingerprint: the answer of a Claim or
// Resolve that gave up waiting for an uncommitted transaction reports the
// caller's fingerprint, in a slice of its own (backends, "Bytes"): the
// caller reusing its buffer changes nothing in the answer.
func TestLockTimeoutAnswerOwnsItsFingerprint(t *testing.T) {
	pool := newPool(t, nil)
	s, err := New(pool, &Config{Schema: testSchema, LockTimeout: 10 * time.Millisecond})
	require.NoError(t, err)
	scope := backendtest.Scope(t)
	holdInTx(t, pool, s, scope, "held")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	requireOwn := func(t *testing.T, buf []byte, rec backends.Record) {
		t.Helper()
		require.Equal(t, backends.StatePending, rec.State)
		require.Equal(t, lockTimeoutHint, rec.LeaseRemaining, "the lock-timeout answer")
		require.Equal(t, []byte("fp"), rec.Fingerprint)
		copy(buf, "zz")
		require.Equal(t, []byte("fp"), rec.Fingerprint, "the reported fingerprint is not the caller's buffer")
	}
	t.Run("Claim", func(t *testing.T) {
		p := claimParams(scope, "held")
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.False(t, r.Claimed)
		requireOwn(t, p.Fingerprint, r.Existing)
	})
	t.Run("InTxClaim", func(t *testing.T) {
		p := claimParams(scope, "held")
		var r backends.ClaimResult
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			r, err = s.InTx(tx).Claim(ctx, p)
			return err
		}))
		require.False(t, r.Claimed)
		requireOwn(t, p.Fingerprint, r.Existing)
	})
	t.Run("Resolve", func(t *testing.T) {
		fp := []byte("fp")
		r, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "held", Fingerprint: fp, Outcome: []byte("v"), Retention: time.Hour, Owner: backendtest.Token()})
		require.NoError(t, err)
		require.False(t, r.Resolved)
		requireOwn(t, fp, r.Existing)
	})
	require.NoError(t, ctx.Err(), "every wait was bounded by LockTimeout")
}

// TestSubMillisecondLockTimeout: a LockTimeout below one millisecond is
// rounded up, never sent as "0ms", which PostgreSQL reads as no timeout.
func TestSubMillisecondLockTimeout(t *testing.T) {
	pool := newPool(t, nil)
	s, err := New(pool, &Config{Schema: testSchema, LockTimeout: 100 * time.Microsecond})
	require.NoError(t, err)
	scope := backendtest.Scope(t)
	holdInTx(t, pool, s, scope, "held")

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, name := range []string{"pool", "tx"} {
		var r backends.ClaimResult
		var err error
		if name == "pool" {
			r, err = s.Claim(ctx, claimParams(scope, "held"))
		} else {
			err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
				r, err = s.InTx(tx).Claim(ctx, claimParams(scope, "held"))
				return err
			})
		}
		require.NoError(t, err, "%s: a sub-millisecond LockTimeout did not bound the wait", name)
		require.False(t, r.Claimed, name)
		require.Equal(t, backends.StatePending, r.Existing.State, name)
	}
	require.False(t, errors.Is(ctx.Err(), context.DeadlineExceeded))
}

func TestLockTimeoutSetting(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{time.Nanosecond, "1ms"},
		{999 * time.Microsecond, "1ms"},
		{time.Millisecond, "1ms"},
		{1001 * time.Microsecond, "2ms"},
		{5 * time.Second, "5000ms"},
		{365 * 24 * time.Hour, "2147483647ms"},
	} {
		require.Equal(t, c.want, lockTimeoutSetting(c.d), "%v", c.d)
	}
}
