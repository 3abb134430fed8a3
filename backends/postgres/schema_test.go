package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// tableStats reads the insert, update and HOT update counts of table that
// this session has not reported yet (in PostgreSQL 15 the xact view also
// counts earlier transactions of the session whose statistics are still
// pending), so callers compare two readings within one transaction.
func tableStats(t *testing.T, tx pgx.Tx, table string) (ins, upd, hot int64) {
	t.Helper()
	require.NoError(t, tx.QueryRow(context.Background(),
		`SELECT n_tup_ins, n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relid = $1::regclass`, table).
		Scan(&ins, &upd, &hot))
	return ins, upd, hot
}

// TestCompletionIsHOT checks the schema's promise: renewals, checkpoints
// and completions change no indexed column, so each is a HOT update (a new
// tuple on the same page, no index entry). With an index on expires_at
// (for a sweeper), none would be.
func TestCompletionIsHOT(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	st := s.InTx(tx)
	ins0, upd0, hot0 := tableStats(t, tx, s.cfg.qualifiedTable())
	const n = 50
	for i := range n {
		p := claimParams("s", "k"+string(rune('A'+i)))
		r, err := st.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := st.Renew(ctx, backends.RenewParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner, Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = st.Checkpoint(ctx, backends.CheckpointParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner, Steps: []byte(`["hold"]`)})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = st.Complete(ctx, backends.CompleteParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner, Outcome: []byte(`{"status":"paid"}`), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	}
	ins, upd, hot := tableStats(t, tx, s.cfg.qualifiedTable())
	ins, upd, hot = ins-ins0, upd-upd0, hot-hot0
	require.EqualValues(t, n, ins)
	require.EqualValues(t, 3*n, upd)
	require.Equal(t, upd, hot, "every renewal, checkpoint and completion is a HOT update")
}

// TestSweepWalksEveryChunk: on a table of many chunks of pages, a sweep
// deletes every expired row, wherever it lies, and none of the live ones,
// among them a record still live past its first lease (renewed); once that
// one expires, the next sweep deletes it.
func TestSweepWalksEveryChunk(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{SweepBatchSize: 300}) // batches smaller than a chunk's expired rows
	ctx := context.Background()
	table := s.cfg.qualifiedTable()
	// 6000 rows of about 400 bytes: some 300 pages, three chunks; every
	// third row expired.
	_, err := pool.Exec(ctx, `INSERT INTO `+table+` (scope, key, state, outcome, expires_at)
		SELECT 's', 'k' || i, 2, convert_to(repeat('x', 400), 'UTF8'),
			CASE WHEN i % 3 = 0 THEN clock_timestamp() - interval '1 second' ELSE clock_timestamp() + interval '1 hour' END
		FROM generate_series(1, 6000) i`)
	require.NoError(t, err)
	var pages int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT pg_relation_size($1::regclass) / 8192`, table).Scan(&pages))
	require.Greater(t, pages, int64(2*sweepPages), "the table spans more than two chunks")

	p := claimParams("s", "late")
	p.Lease, p.Retention = 50*time.Millisecond, 50*time.Millisecond
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Renew(ctx, backends.RenewParams{Scope: "s", Key: "late", Owner: p.Owner, Lease: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	backendtest.Elapse(t, s, p.Lease) // past the claim's lease and retention

	n, err := s.Sweep(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 2000, n)
	var left, expired int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE expires_at <= clock_timestamp()) FROM `+table).Scan(&left, &expired))
	require.Equal(t, 4001, left, "the live rows and the renewed record stay")
	require.Zero(t, expired)
	dup, err := s.Claim(ctx, claimParams("s", "late"))
	require.NoError(t, err)
	require.False(t, dup.Claimed)

	_, err = pool.Exec(ctx, `UPDATE `+table+` SET expires_at = clock_timestamp() - interval '1 second' WHERE key = 'late'`)
	require.NoError(t, err)
	n, err = s.Sweep(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// TestSweepSkipsLockedRows: a sweep never waits for a row locked by an
// open transaction (a DoTx that took an expired record over): it deletes
// the other expired rows and returns at once, and leaves the locked row
// to a later sweep. Meanwhile claims of other keys proceed.
func TestSweepSkipsLockedRows(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{SweepBatchSize: 10})
	ctx := context.Background()
	table := s.cfg.qualifiedTable()
	_, err := pool.Exec(ctx, `INSERT INTO `+table+` (scope, key, state, outcome, expires_at)
		SELECT 's', 'k' || i, 2, '\x', clock_timestamp() - interval '1 second' FROM generate_series(1, 100) i`)
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM `+table+` WHERE scope = 's' AND key = 'k7' FOR UPDATE`)
	require.NoError(t, err)

	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := s.Sweep(sctx)
	require.NoError(t, err, "the sweep did not wait for the locked row")
	require.EqualValues(t, 99, n)
	r, err := s.Claim(sctx, claimParams("s", "fresh"))
	require.NoError(t, err)
	require.True(t, r.Claimed)

	require.NoError(t, tx.Rollback(ctx))
	n, err = s.Sweep(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the row unlocked is swept next time")
}

// TestClaimReportsExpiresIn: a claim that finds a completed
// record reports the time it has left by the server's clock, and none for
// a pending one — from its first statement and from the takeover
// statement alike (which answers when the first saw the key expired or
// absent and a concurrent session completed it in between).
func TestClaimReportsExpiresIn(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	ctx := context.Background()
	p := claimParams("s", "k")
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	pending, err := s.Claim(ctx, claimParams("s", "k"))
	require.NoError(t, err)
	require.Equal(t, backends.StatePending, pending.Existing.State)
	require.Zero(t, pending.Existing.ExpiresIn)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "k", Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	done, err := s.Claim(ctx, claimParams("s", "k"))
	require.NoError(t, err)
	require.Equal(t, backends.StateCompleted, done.Existing.State)
	require.LessOrEqual(t, done.Existing.ExpiresIn, time.Hour)
	require.Greater(t, done.Existing.ExpiresIn, 50*time.Minute)

	row, err := s.sql.claimOnce(ctx, s.db, claimParams("s", "k"))
	require.NoError(t, err)
	slow, retry := row.decide([]byte("fp"))
	require.False(t, retry)
	require.Equal(t, backends.StateCompleted, slow.Existing.State)
	require.LessOrEqual(t, slow.Existing.ExpiresIn, time.Hour)
	require.Greater(t, slow.Existing.ExpiresIn, 50*time.Minute, "the takeover statement reports the time left too")
}
