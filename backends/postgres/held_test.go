package postgres

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestListHeldReadsThePartialIndex: listing held keys in a table of
// 20 000 completed and pending rows and a few held ones reads the partial
// index on held rows, not the table; the index holds the held rows alone,
// and a completion of an ordinary claim stays a HOT update beside it.
func TestListHeldReadsThePartialIndex(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	s := newTable(t, pool, Config{})
	table := s.cfg.qualifiedTable()
	_, err := pool.Exec(ctx, `INSERT INTO `+table+` (scope, key, fingerprint, state, owner, lease_until, outcome, expires_at, claimed_at)
		SELECT 's', 'k' || i, '', CASE WHEN i % 2 = 0 THEN 2 ELSE 1 END, 'o',
			CASE WHEN i % 2 = 0 THEN NULL ELSE clock_timestamp() + interval '1 hour' END,
			CASE WHEN i % 2 = 0 THEN 'v'::bytea END,
			clock_timestamp() + interval '1 hour', clock_timestamp()
		FROM generate_series(1, 20000) i`)
	require.NoError(t, err)
	for _, k := range []string{"h1", "h2", "h3"} {
		p := backends.ClaimParams{Scope: "s", Key: k, Owner: "o-" + k, Lease: time.Minute, Retention: time.Hour}
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := s.Hold(ctx, backends.HoldParams{Scope: "s", Key: k, Owner: p.Owner, For: time.Hour, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
	}
	_, err = pool.Exec(ctx, `ANALYZE `+table)
	require.NoError(t, err)

	rows, err := pool.Query(ctx, `EXPLAIN `+s.sql.ListHeld, int16(backends.StateHeld), int64(0), "", "", "", "", 100)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	text := strings.Join(plan, "\n")
	require.Contains(t, text, s.cfg.table+"_held_idx", "held keys come from the partial index:\n%s", text)
	require.NotContains(t, text, "Seq Scan", "never the table:\n%s", text)

	var indexed int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE held_at IS NOT NULL`).Scan(&indexed))
	require.Equal(t, 3, indexed, "only held rows are in the index")

	page, err := s.List(ctx, backends.ListParams{State: backends.StateHeld, Limit: 2})
	require.NoError(t, err)
	require.Len(t, page.Records, 2)
	require.NotEmpty(t, page.Next)
	page, err = s.List(ctx, backends.ListParams{State: backends.StateHeld, Limit: 2, Cursor: page.Next})
	require.NoError(t, err)
	require.Len(t, page.Records, 1)
	require.Equal(t, "h3", page.Records[0].Key)
	require.Empty(t, page.Next)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, upd0, hot0 := tableStats(t, tx, table)
	p := claimParams("s", "after")
	c, err := s.InTx(tx).Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, c.Claimed)
	ok, err := s.InTx(tx).Complete(ctx, backends.CompleteParams{Scope: "s", Key: "after", Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	_, upd, hot := tableStats(t, tx, table)
	require.EqualValues(t, 1, upd-upd0)
	require.EqualValues(t, 1, hot-hot0, "a completion is still a HOT update beside the held index")
}

// TestHeldReportAgreesWithTheDecision: a Claim, Resolve or LeaseHeld
// refused by a held record reports a held record that explains the
// refusal, with its details, although it reads them in a second
// statement: when the hold, the reconciler's lease or the record itself
// ends between the two, it decides again instead of reporting an ended
// hold it did not take over, a lapsed lease it did not resolve or lease
// past, or a held record without its hold; inside a transaction too.
// Holds, leases and retentions of a few hundred microseconds end in that
// window on some of the keys.
func TestHeldReportAgreesWithTheDecision(t *testing.T) {
	pool := newPool(t, nil)
	ps := newStore(t, pool)
	for name, s := range map[string]backends.Store{"Store": ps, "InTx": &autoTx{pool: pool, s: ps}} {
		t.Run(name, func(t *testing.T) { testHeldReportAgreesWithTheDecision(t, s) })
	}
}

func testHeldReportAgreesWithTheDecision(t *testing.T, s backends.Store) {
	ctx := context.Background()
	scope := backendtest.Scope(t)
	for i := range 300 {
		short := time.Duration(50+i%20*50) * time.Microsecond
		key := "k" + strconv.Itoa(i)
		owner := "owner-" + key
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		hold, retention := time.Hour, time.Hour
		if i%3 == 0 {
			hold, retention = short, short
		}
		ok, err := s.Hold(ctx, backends.HoldParams{Scope: scope, Key: key, Owner: owner, For: hold, Code: "c", Retention: retention})
		require.NoError(t, err)
		require.True(t, ok)
		var rec backends.Record
		switch i % 3 {
		case 0:
			r, err = s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: "other-" + key, Lease: time.Minute, Retention: time.Hour})
			require.NoError(t, err)
			rec = r.Existing
			ended := rec.Held.Remaining <= 0 && rec.LeaseRemaining <= 0
			require.False(t, rec.State == backends.StateHeld && ended, "key %d: a refused Claim reported a held record it could take over: %+v", i, rec)
		case 1:
			l, err := s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: scope, Key: key, Owner: "reconciler-" + key, Lease: short})
			require.NoError(t, err)
			require.True(t, l.Leased)
			res, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: key, Owner: "other-" + key, Outcome: []byte("v"), Retention: time.Hour})
			require.NoError(t, err)
			rec = res.Existing
			require.False(t, rec.State == backends.StateHeld && rec.LeaseRemaining <= 0, "key %d: a refused Resolve reported a held record with no live lease: %+v", i, rec)
		case 2:
			l, err := s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: scope, Key: key, Owner: "reconciler-" + key, Lease: short})
			require.NoError(t, err)
			require.True(t, l.Leased)
			l, err = s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: scope, Key: key, Owner: "other-" + key, Lease: time.Hour})
			require.NoError(t, err)
			rec = l.Existing
			require.False(t, rec.State == backends.StateHeld && rec.LeaseRemaining <= 0, "key %d: a refused LeaseHeld reported a held record with no live lease: %+v", i, rec)
		}
		if rec.State == backends.StateHeld {
			require.Equal(t, "c", rec.Held.Code, "key %d: a held record is reported with its details", i)
		}
	}
}
