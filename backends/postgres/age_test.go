package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// TestAgeNeverNegative: a row stamped by a clock ahead of the server's
// (claimed_at or held_at an hour in the future, as after a step back of
// the server's clock, or a row written by another server) reads as age 0
// in Get, List and Count, never as minus an hour, and a List without
// OlderThan still lists it.
func TestAgeNeverNegative(t *testing.T) {
	pool := newPool(t, nil)
	ctx := context.Background()
	s := newTable(t, pool, Config{})
	table := s.cfg.qualifiedTable()
	_, err := pool.Exec(ctx, `INSERT INTO `+table+` (scope, key, fingerprint, state, owner, lease_until, expires_at, claimed_at)
		VALUES ('s', 'pending', '', 1, 'o', clock_timestamp() + interval '1 hour', clock_timestamp() + interval '2 hours',
			clock_timestamp() + interval '1 hour')`)
	require.NoError(t, err)
	p := backends.ClaimParams{Scope: "s", Key: "held", Owner: "o-held", Lease: time.Minute, Retention: time.Hour}
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Hold(ctx, backends.HoldParams{Scope: "s", Key: "held", Owner: p.Owner, For: time.Hour, Code: "c", Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	tag, err := pool.Exec(ctx, `UPDATE `+table+` SET held_at = clock_timestamp() + interval '1 hour', claimed_at = clock_timestamp() + interval '1 hour' WHERE key = 'held'`)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())

	for _, key := range []string{"pending", "held"} {
		rec, err := s.Get(ctx, "s", key)
		require.NoError(t, err)
		require.NotZero(t, rec.State, key)
		require.Zero(t, rec.Age, "%s: Get reports age 0, not a negative one", key)
	}
	for _, state := range []backends.State{backends.StatePending, backends.StateHeld} {
		page, err := s.List(ctx, backends.ListParams{State: state})
		require.NoError(t, err)
		require.Len(t, page.Records, 1, "state %d: listed without OlderThan", state)
		require.Zero(t, page.Records[0].Record.Age, "state %d: List reports age 0", state)
		page, err = s.List(ctx, backends.ListParams{State: state, OlderThan: time.Millisecond})
		require.NoError(t, err)
		require.Empty(t, page.Records, "state %d: age 0 is younger than 1 ms", state)
	}
	c, err := s.Count(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, c.Pending)
	require.EqualValues(t, 1, c.Held)
	require.Zero(t, c.OldestPending, "Count's oldest pending age is never negative")
	require.Zero(t, c.OldestHeld, "Count's oldest held age is never negative")
}
