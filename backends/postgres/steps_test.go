package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// The checkpoints (steps) of the store contract on the real server, on
// every claim path: the insert first, the read first, pgx's
// simple protocol (the claim row's text scan) and a store bound to a
// transaction (each operation in a transaction of its own).

// stepsStore is a store under test and the Store of its table, for Get.
type stepsStore struct {
	st backends.Store
	s  *Store
}

func stepsStores(t *testing.T) map[string]stepsStore {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	first, read := newOrderedStore(t, pool, true), newOrderedStore(t, pool, false)
	simple := newStore(t, newPool(t, simpleProtocol))
	return map[string]stepsStore{
		"default":         {s, s},
		"insert first":    {first, first},
		"read first":      {read, read},
		"simple protocol": {simple, simple},
		"in tx":           {&autoTx{pool: pool, s: s}, s},
	}
}

func (c stepsStore) claim(t *testing.T, p backends.ClaimParams) backends.ClaimResult {
	t.Helper()
	r, err := c.st.Claim(context.Background(), p)
	require.NoError(t, err)
	return r
}

func (c stepsStore) checkpoint(t *testing.T, scope, key, owner string, steps []byte) bool {
	t.Helper()
	ok, err := c.st.Checkpoint(context.Background(), backends.CheckpointParams{Scope: scope, Key: key, Owner: owner, Steps: steps})
	require.NoError(t, err)
	return ok
}

func (c stepsStore) release(t *testing.T, scope, key, owner string) bool {
	t.Helper()
	ok, err := c.st.Release(context.Background(), backends.ReleaseParams{Scope: scope, Key: key, Owner: owner})
	require.NoError(t, err)
	return ok
}

func (c stepsStore) get(t *testing.T, scope, key string) backends.Record {
	t.Helper()
	rec, err := c.s.Get(context.Background(), scope, key)
	require.NoError(t, err)
	return rec
}

// TestStepsOfALiveClaim: a checkpoint replaces the steps of its owner's
// claim and nobody else's; a re-sent claim returns them, a duplicate and
// a replay never do; an empty checkpoint removes them; the completion
// keeps them; every slice is the caller's own.
func TestStepsOfALiveClaim(t *testing.T) {
	for name, c := range stepsStores(t) {
		t.Run(name, func(t *testing.T) {
			scope := backendtest.Scope(t)
			p := claimParams(scope, "k")
			r := c.claim(t, p)
			require.True(t, r.Claimed)
			require.Nil(t, r.Steps, "a new record has no steps")
			require.Nil(t, c.get(t, scope, "k").Steps)

			require.True(t, c.checkpoint(t, scope, "k", p.Owner, []byte("one")))
			require.True(t, c.checkpoint(t, scope, "k", p.Owner, []byte("one")), "a re-sent checkpoint")
			require.Equal(t, []byte("one"), c.get(t, scope, "k").Steps)
			r = c.claim(t, p)
			require.True(t, r.Claimed, "a re-sent claim")
			require.False(t, r.TookOver)
			require.Equal(t, []byte("one"), r.Steps, "a re-sent claim returns the steps")

			dup := c.claim(t, claimParams(scope, "k"))
			require.False(t, dup.Claimed)
			require.Equal(t, backends.StatePending, dup.Existing.State)
			require.Nil(t, dup.Steps, "a duplicate gets no steps")
			require.Nil(t, dup.Existing.Steps)
			require.False(t, c.checkpoint(t, scope, "k", "stranger", []byte("theirs")))
			require.False(t, c.checkpoint(t, scope, "absent", p.Owner, []byte("x")))

			require.True(t, c.checkpoint(t, scope, "k", p.Owner, []byte{}))
			require.Nil(t, c.get(t, scope, "k").Steps, "an empty checkpoint removes the steps")
			require.Nil(t, c.claim(t, p).Steps)

			buf := []byte("three")
			require.True(t, c.checkpoint(t, scope, "k", p.Owner, buf))
			buf[0] = 'X'
			got := c.get(t, scope, "k").Steps
			require.Equal(t, []byte("three"), got, "the store kept no slice of its parameters")
			got[0] = 'Y'
			resent := c.claim(t, p).Steps
			require.Equal(t, []byte("three"), resent, "a returned slice is the caller's own")
			resent[0] = 'Z'
			require.Equal(t, []byte("three"), c.get(t, scope, "k").Steps)

			ok, err := c.st.Complete(context.Background(), backends.CompleteParams{Scope: scope, Key: "k", Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
			require.NoError(t, err)
			require.True(t, ok)
			require.False(t, c.checkpoint(t, scope, "k", p.Owner, []byte("late")), "a completed record takes no checkpoint")
			rec := c.get(t, scope, "k")
			require.Equal(t, backends.StateCompleted, rec.State)
			require.Equal(t, []byte("three"), rec.Steps, "the completion keeps the steps")
			replay := c.claim(t, claimParams(scope, "k"))
			require.Equal(t, backends.StateCompleted, replay.Existing.State)
			require.Nil(t, replay.Steps, "a replay gets no steps")
			require.Nil(t, replay.Existing.Steps)
		})
	}
}

// TestCheckpointChangesNothingElse: a checkpoint leaves the lease and the
// expiry as they were, and applies after the lease lapsed while nobody
// took the claim over.
func TestCheckpointChangesNothingElse(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	p := claimParams(scope, "k")
	p.Lease = 100 * time.Millisecond
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	times := func() (lease, expires time.Time) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT lease_until, expires_at FROM `+s.cfg.qualifiedTable()+` WHERE scope = $1 AND key = 'k'`, scope).Scan(&lease, &expires))
		return lease, expires
	}
	lease, expires := times()
	backendtest.Elapse(t, s, p.Lease)
	ok, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: "k", Owner: p.Owner, Steps: []byte("s")})
	require.NoError(t, err)
	require.True(t, ok, "the lease lapsed but nobody took the claim over")
	l, e := times()
	require.True(t, lease.Equal(l), "the lease is unchanged")
	require.True(t, expires.Equal(e), "the expiry is unchanged")
}

// TestStepsSurviveATakeover: a claim that takes over a lapsed lease, or a
// held record whose hold ended, gets the record's steps, including those
// the previous owner wrote after its lease lapsed; that owner's later
// checkpoint is fenced off.
func TestStepsSurviveATakeover(t *testing.T) {
	for name, c := range stepsStores(t) {
		t.Run(name, func(t *testing.T) {
			scope := backendtest.Scope(t)
			p := claimParams(scope, "lapsed")
			p.Lease = 50 * time.Millisecond
			require.True(t, c.claim(t, p).Claimed)
			require.True(t, c.checkpoint(t, scope, "lapsed", p.Owner, []byte("s1")))
			backendtest.Elapse(t, c.st, p.Lease)
			require.True(t, c.checkpoint(t, scope, "lapsed", p.Owner, []byte("s2")))
			other := claimParams(scope, "lapsed")
			other.Fingerprint = []byte("another")
			require.False(t, c.claim(t, other).Claimed, "another fingerprint takes nothing over")
			next := claimParams(scope, "lapsed")
			r := c.claim(t, next)
			require.True(t, r.Claimed)
			require.True(t, r.TookOver)
			require.Equal(t, []byte("s2"), r.Steps)
			require.False(t, c.checkpoint(t, scope, "lapsed", p.Owner, []byte("stale")), "the previous owner is fenced off")
			require.Equal(t, []byte("s2"), c.claim(t, next).Steps, "a re-send of the takeover")
			require.Equal(t, []byte("s2"), c.get(t, scope, "lapsed").Steps)

			h := claimParams(scope, "held")
			require.True(t, c.claim(t, h).Claimed)
			require.True(t, c.checkpoint(t, scope, "held", h.Owner, []byte("h")))
			ok, err := c.st.Hold(context.Background(), backends.HoldParams{Scope: scope, Key: "held", Owner: h.Owner, For: 50 * time.Millisecond, Code: "c", Retention: time.Hour})
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, []byte("h"), c.get(t, scope, "held").Steps, "a hold keeps the steps")
			dup := c.claim(t, claimParams(scope, "held"))
			require.Equal(t, backends.StateHeld, dup.Existing.State)
			require.Nil(t, dup.Existing.Steps, "the held record a duplicate gets has no steps")
			require.Nil(t, dup.Steps)
			lease := backends.LeaseHeldParams{Scope: scope, Key: "held", Owner: backendtest.Token(), Lease: 50 * time.Millisecond}
			leased, err := c.st.LeaseHeld(context.Background(), lease)
			require.NoError(t, err)
			require.True(t, leased.Leased)
			lease.Owner = backendtest.Token()
			leased, err = c.st.LeaseHeld(context.Background(), lease)
			require.NoError(t, err)
			require.False(t, leased.Leased)
			require.Equal(t, backends.StateHeld, leased.Existing.State)
			require.Nil(t, leased.Existing.Steps, "the held record LeaseHeld reports has no steps")
			res, err := c.st.Resolve(context.Background(), backends.ResolveParams{Scope: scope, Key: "held", Fingerprint: []byte("fp"), Outcome: []byte("r"), Retention: time.Hour})
			require.NoError(t, err)
			require.False(t, res.Resolved, "a reconciler's lease is live")
			require.Nil(t, res.Existing.Steps, "the held record Resolve reports has no steps")
			backendtest.Elapse(t, c.st, 50*time.Millisecond)
			r = c.claim(t, claimParams(scope, "held"))
			require.True(t, r.TookOver)
			require.Equal(t, []byte("h"), r.Steps)
		})
	}
}

// TestStepsDieWithTheRecord: a claim of an expired record (pending or
// completed) starts with no steps, as does one after Admin.Delete.
func TestStepsDieWithTheRecord(t *testing.T) {
	for name, c := range stepsStores(t) {
		t.Run(name, func(t *testing.T) {
			scope := backendtest.Scope(t)
			p := claimParams(scope, "pending")
			p.Lease, p.Retention = 50*time.Millisecond, 50*time.Millisecond
			require.True(t, c.claim(t, p).Claimed)
			require.True(t, c.checkpoint(t, scope, "pending", p.Owner, []byte("s")))
			q := claimParams(scope, "completed")
			require.True(t, c.claim(t, q).Claimed)
			require.True(t, c.checkpoint(t, scope, "completed", q.Owner, []byte("s")))
			ok, err := c.st.Complete(context.Background(), backends.CompleteParams{Scope: scope, Key: "completed", Owner: q.Owner, Outcome: []byte("v"), Retention: 50 * time.Millisecond})
			require.NoError(t, err)
			require.True(t, ok)
			backendtest.Elapse(t, c.st, 50*time.Millisecond)
			for _, key := range []string{"pending", "completed"} {
				r := c.claim(t, claimParams(scope, key))
				require.True(t, r.Claimed, key)
				require.False(t, r.TookOver, key)
				require.Nil(t, r.Steps, "%s: an expired record's steps are gone", key)
				require.Nil(t, c.get(t, scope, key).Steps, key)
			}

			d := claimParams(scope, "deleted")
			require.True(t, c.claim(t, d).Claimed)
			require.True(t, c.checkpoint(t, scope, "deleted", d.Owner, []byte("s")))
			_, err = c.s.Delete(context.Background(), scope, "deleted")
			require.NoError(t, err)
			r := c.claim(t, claimParams(scope, "deleted"))
			require.True(t, r.Claimed)
			require.Nil(t, r.Steps)
		})
	}
}

// TestReleaseKeepsARecordWithSteps: Release deletes a record without
// steps; it keeps one with steps, its lease ended, for the next claim with
// a matching fingerprint to take over, and refuses another fingerprint.
func TestReleaseKeepsARecordWithSteps(t *testing.T) {
	for name, c := range stepsStores(t) {
		t.Run(name, func(t *testing.T) {
			scope := backendtest.Scope(t)
			p := claimParams(scope, "k")
			require.True(t, c.claim(t, p).Claimed)
			require.True(t, c.release(t, scope, "k", p.Owner))
			require.Zero(t, c.get(t, scope, "k").State, "a record without steps is deleted")

			p = claimParams(scope, "k")
			require.True(t, c.claim(t, p).Claimed)
			require.True(t, c.checkpoint(t, scope, "k", p.Owner, []byte("s")))
			require.False(t, c.release(t, scope, "k", "stranger"))
			require.True(t, c.release(t, scope, "k", p.Owner))
			rec := c.get(t, scope, "k")
			require.Equal(t, backends.StatePending, rec.State, "a record with steps is kept")
			require.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0), "its lease ended")
			require.Equal(t, []byte("s"), rec.Steps)
			require.True(t, c.release(t, scope, "k", p.Owner), "a re-sent release")

			other := claimParams(scope, "k")
			other.Fingerprint = []byte("another")
			r := c.claim(t, other)
			require.False(t, r.Claimed, "another fingerprint is refused")
			require.Equal(t, backends.StatePending, r.Existing.State)
			require.Nil(t, r.Steps)
			next := claimParams(scope, "k")
			r = c.claim(t, next)
			require.True(t, r.Claimed)
			require.True(t, r.TookOver)
			require.Equal(t, []byte("s"), r.Steps)
			require.False(t, c.release(t, scope, "k", p.Owner), "the previous owner releases nothing")
			require.Equal(t, []byte("s"), c.get(t, scope, "k").Steps)
		})
	}
}

// TestReplayRowCarriesNoSteps: the claim statements' rows carry a
// record's steps to its own pending owner only: a replay, a duplicate and
// a mismatch read none from any of them.
func TestReplayRowCarriesNoSteps(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	big := make([]byte, 1<<20) // stored out of line
	for _, key := range []string{"pending", "completed"} {
		p := claimParams(scope, key)
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: key, Owner: p.Owner, Steps: big})
		require.NoError(t, err)
		require.True(t, ok)
		if key == "completed" {
			complete(t, s, scope, key, p.Owner)
		}
		for _, fp := range []string{"fp", "mismatch"} {
			q := claimParams(scope, key)
			q.Fingerprint = []byte(fp)
			tx := claimTx(t, s, q)
			require.True(t, tx.found, key)
			require.Nil(t, tx.steps, "claim_tx.sql, %s, %s", key, fp)
			read, err := s.sql.readClaim(ctx, s.db, newClaimArgs(q, nil))
			require.NoError(t, err)
			require.Nil(t, read.steps, "read_claim.sql, %s, %s", key, fp)
			slow, err := s.sql.claimOnce(ctx, s.db, q)
			require.NoError(t, err)
			require.Nil(t, slow.tookOver, key)
			require.Nil(t, slow.steps, "takeover.sql, %s, %s", key, fp)
		}
		own, err := s.sql.readClaim(ctx, s.db, newClaimArgs(p, nil))
		require.NoError(t, err)
		if key == "pending" {
			require.Len(t, own.steps, len(big), "the owner's re-send reads them")
			require.Len(t, claimTx(t, s, p).steps, len(big), "the owner's re-send reads them in a transaction")
		} else {
			require.Nil(t, own.steps, "a completed record's owner replays without them")
			require.Nil(t, claimTx(t, s, p).steps, "a completed record's owner replays without them in a transaction")
		}
	}
}

// TestReleaseWaitingForACheckpoint: a Release whose snapshot predates a
// checkpoint of the record, which commits while the Release waits for
// its row, keeps the record with its steps: a record with steps is never
// deleted.
func TestReleaseWaitingForACheckpoint(t *testing.T) {
	pool := newPool(t, nil)
	s := newStore(t, pool)
	ctx := context.Background()
	scope := backendtest.Scope(t)
	p := claimParams(scope, "k")
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)

	tx, pid := beginWithPID(t, pool)
	ok, err := s.InTx(tx).Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: "k", Owner: p.Owner, Steps: []byte("s")})
	require.NoError(t, err)
	require.True(t, ok)

	released := make(chan error, 1)
	go func() {
		ok, err := s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "k", Owner: p.Owner})
		if err == nil && !ok {
			err = errors.New("release did not apply")
		}
		released <- err
	}()
	requireBlockedBy(t, pool, pid, "the release waits for the checkpoint's transaction")
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-released)
	rec, err := s.Get(ctx, scope, "k")
	require.NoError(t, err)
	require.Equal(t, backends.StatePending, rec.State, "the record is kept")
	require.Equal(t, []byte("s"), rec.Steps)
	require.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0), "its lease ended")
}

// claimTx runs claim_tx.sql once on s's DB, outside a transaction.
func claimTx(t *testing.T, s *Store, p backends.ClaimParams) fastRow {
	t.Helper()
	var r fastRow
	require.NoError(t, r.scan(s.db.QueryRow(t.Context(), s.sql.ClaimTx, s.sql.claimArgs(p)...)))
	return r
}
