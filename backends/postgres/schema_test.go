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

// TestCompletionIsHOT checks the schema's promise: renewals and completions
// change no indexed column, so each is a HOT update (a new tuple on the
// same page, no index entry). On schema 001, whose sweeper index covered
// expires_at, none was.
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
		ok, err = st.Complete(ctx, backends.CompleteParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner, Outcome: []byte(`{"status":"paid"}`), Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	}
	ins, upd, hot := tableStats(t, tx, s.cfg.qualifiedTable())
	ins, upd, hot = ins-ins0, upd-upd0, hot-hot0
	require.EqualValues(t, n, ins)
	require.EqualValues(t, 2*n, upd)
	require.Equal(t, upd, hot, "every renewal and completion is a HOT update")
}

// TestSweepMovesLateRecords: a record still live when its claim-time
// sweep_after passes (renewed past its first lease, then completed) is not
// deleted; its sweep_after moves to its expiry, so the next sweep does not
// look at it again, and it is deleted once it expires.
func TestSweepMovesLateRecords(t *testing.T) {
	pool := newPool(t, nil)
	s := newTable(t, pool, Config{})
	ctx := context.Background()
	table := s.cfg.qualifiedTable()
	p := claimParams("s", "late")
	p.Lease, p.Retention = 50*time.Millisecond, 50*time.Millisecond
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Renew(ctx, backends.RenewParams{Scope: "s", Key: "late", Owner: p.Owner, Lease: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	time.Sleep(150 * time.Millisecond) // past sweep_after = claim + lease + retention
	var due bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT sweep_after <= clock_timestamp() FROM `+table).Scan(&due))
	require.True(t, due)

	n, err := s.Sweep(ctx, 10)
	require.NoError(t, err)
	require.Zero(t, n, "a live record is never swept")
	require.NoError(t, pool.QueryRow(ctx, `SELECT sweep_after = expires_at AND sweep_after > clock_timestamp() FROM `+table).Scan(&due))
	require.True(t, due, "its sweep_after moved to its expiry")
	dup, err := s.Claim(ctx, claimParams("s", "late"))
	require.NoError(t, err)
	require.False(t, dup.Claimed)

	_, err = pool.Exec(ctx, `UPDATE `+table+` SET expires_at = clock_timestamp() - interval '1 second', sweep_after = '-infinity'`)
	require.NoError(t, err)
	n, err = s.Sweep(ctx, 10)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
}

// TestMigrateFromSchema001 upgrades a table created by migration 001 alone,
// holding a live completed record, a live pending one and an expired one:
// the records keep their meaning, the sweeper deletes only the expired one,
// and completions on the upgraded table are HOT updates.
func TestMigrateFromSchema001(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	cfg := &Config{Schema: testSchema, Table: "m_" + randomSuffix()}
	r, err := resolveConfig(cfg)
	require.NoError(t, err)
	ms, err := loadMigrations(r)
	require.NoError(t, err)
	require.Len(t, ms, 3)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, migrateTx(ctx, tx, r, ms[:1]))
	table := r.qualifiedTable()
	_, err = tx.Exec(ctx, `INSERT INTO `+table+` (scope, key, fingerprint, state, owner, lease_until, outcome, expires_at) VALUES
		('s', 'done', 'fp', 2, 'o1', NULL, 'v', clock_timestamp() + interval '1 hour'),
		('s', 'pending', 'fp', 1, 'o2', clock_timestamp() + interval '1 hour', NULL, clock_timestamp() + interval '1 hour'),
		('s', 'gone', 'fp', 2, 'o3', NULL, 'v', clock_timestamp() - interval '1 second')`)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))

	require.NoError(t, Migrate(ctx, pool, cfg))
	s, err := New(pool, cfg)
	require.NoError(t, err)
	rec, _, found, err := s.Get(ctx, "s", "done")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, []byte("v"), rec.Outcome)
	res, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "pending", Fingerprint: []byte("fp"), Owner: backendtest.Token(), Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.False(t, res.Claimed)
	require.Equal(t, backends.StatePending, res.Existing.State)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: "s", Key: "pending", Owner: "o2", Outcome: []byte("w"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok, "the pre-migration owner still completes its claim")

	n, err := s.Sweep(ctx, 10)
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "only the expired record is swept")
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE sweep_after > clock_timestamp()`).Scan(&left))
	require.Equal(t, 2, left, "the live records' sweep_after moved to their expiry")

	tx, err = pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, upd0, hot0 := tableStats(t, tx, table)
	p := claimParams("s", "after")
	c, err := s.InTx(tx).Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, c.Claimed)
	ok, err = s.InTx(tx).Complete(ctx, backends.CompleteParams{Scope: "s", Key: "after", Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	_, upd, hot := tableStats(t, tx, table)
	require.EqualValues(t, 1, upd-upd0)
	require.EqualValues(t, 1, hot-hot0, "the completion on the upgraded table is a HOT update")
}
