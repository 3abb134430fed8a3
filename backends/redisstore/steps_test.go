package redisstore_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/internal/redislua"
)

// stepsFixture is a store on the single node and the raw client beside
// it, for tests that look at the keys a record's checkpoints live in.
type stepsFixture struct {
	t     *testing.T
	c     *redis.Client
	s     *redisstore.Store
	scope string
}

func newStepsFixture(t *testing.T) *stepsFixture {
	c := singleClient(t)
	return &stepsFixture{t: t, c: c, s: newStore(t, c, nil), scope: backendtest.Scope(t)}
}

// keys returns the Redis keys of the record of key and of its checkpoints
// (scopes of backendtest.Scope need no escaping).
func (f *stepsFixture) keys(key string) (record, steps string) {
	record = testPrefix + "{" + strconv.Itoa(len(f.scope)) + ":" + f.scope + ":" + key + "}"
	return record, record + ":steps"
}

func (f *stepsFixture) claim(key, fp, owner string, lease time.Duration) backends.ClaimResult {
	f.t.Helper()
	r, err := f.s.Claim(f.t.Context(), backends.ClaimParams{Scope: f.scope, Key: key, Fingerprint: []byte(fp), Owner: owner, Lease: lease, Retention: time.Hour})
	require.NoError(f.t, err)
	return r
}

func (f *stepsFixture) checkpoint(key, owner, steps string) bool {
	f.t.Helper()
	ok, err := f.s.Checkpoint(f.t.Context(), backends.CheckpointParams{Scope: f.scope, Key: key, Owner: owner, Steps: []byte(steps)})
	require.NoError(f.t, err)
	return ok
}

func (f *stepsFixture) get(key string) backends.Record {
	f.t.Helper()
	r, err := f.s.Get(f.t.Context(), f.scope, key)
	require.NoError(f.t, err)
	return r
}

// sameExpiry checks that the checkpoints of key exist and expire at the
// very millisecond its record does.
func (f *stepsFixture) sameExpiry(key, when string) {
	f.t.Helper()
	record, steps := f.keys(key)
	r, err := f.c.PExpireTime(f.t.Context(), record).Result()
	require.NoError(f.t, err)
	s, err := f.c.PExpireTime(f.t.Context(), steps).Result()
	require.NoError(f.t, err)
	require.Positive(f.t, r, "%s: the record has an expiry", when)
	require.Equal(f.t, r, s, "%s: the checkpoints expire with the record", when)
}

// stepsKeyExists reports whether the checkpoints key of key exists.
func (f *stepsFixture) stepsKeyExists(key string) bool {
	f.t.Helper()
	_, steps := f.keys(key)
	n, err := f.c.Exists(f.t.Context(), steps).Result()
	require.NoError(f.t, err)
	return n == 1
}

// TestCheckpointsExpireWithTheRecord checks, on the server, that every
// write that moves a record's expiry moves that of its checkpoints to the
// same millisecond, and that Checkpoint writes nothing else.
func TestCheckpointsExpireWithTheRecord(t *testing.T) {
	f := newStepsFixture(t)
	ctx := t.Context()
	owner := backendtest.Token()
	require.True(t, f.claim("k", "fp", owner, time.Minute).Claimed)
	record, _ := f.keys("k")
	before, err := f.c.Get(ctx, record).Result()
	require.NoError(t, err)
	exp, err := f.c.PExpireTime(ctx, record).Result()
	require.NoError(t, err)

	require.True(t, f.checkpoint("k", owner, "one"))
	f.sameExpiry("k", "checkpoint")
	after, err := f.c.Get(ctx, record).Result()
	require.NoError(t, err)
	assert.Equal(t, before, after, "Checkpoint leaves the record as it was")
	exp2, err := f.c.PExpireTime(ctx, record).Result()
	require.NoError(t, err)
	assert.Equal(t, exp, exp2, "and its expiry")

	ok, err := f.s.Renew(ctx, backends.RenewParams{Scope: f.scope, Key: "k", Owner: owner, Lease: 2 * time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	f.sameExpiry("k", "renew past the retention")

	ok, err = f.s.Complete(ctx, backends.CompleteParams{Scope: f.scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: 30 * time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
	f.sameExpiry("k", "complete")
	assert.Equal(t, []byte("one"), f.get("k").Steps, "a completed record keeps its checkpoints")

	// Held, leased, resolved.
	owner = backendtest.Token()
	require.True(t, f.claim("h", "fp", owner, time.Minute).Claimed)
	require.True(t, f.checkpoint("h", owner, "two"))
	ok, err = f.s.Hold(ctx, backends.HoldParams{Scope: f.scope, Key: "h", Owner: owner, For: 2 * time.Hour, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	f.sameExpiry("h", "hold")
	reconciler := backendtest.Token()
	l, err := f.s.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: f.scope, Key: "h", Owner: reconciler, Lease: 3 * time.Hour})
	require.NoError(t, err)
	require.True(t, l.Leased)
	f.sameExpiry("h", "lease past the hold")
	r, err := f.s.Resolve(ctx, backends.ResolveParams{Scope: f.scope, Key: "h", Owner: reconciler, Outcome: []byte("v"), Retention: 10 * time.Minute, OnlyLeased: true})
	require.NoError(t, err)
	require.True(t, r.Resolved)
	f.sameExpiry("h", "resolve")
	assert.Equal(t, []byte("two"), f.get("h").Steps, "a resolved record keeps its checkpoints")

	// Taken over, released (kept), taken over again.
	owner = backendtest.Token()
	require.True(t, f.claim("t", "fp", owner, time.Millisecond).Claimed)
	require.True(t, f.checkpoint("t", owner, "three"))
	backendtest.Elapse(t, f.s, time.Millisecond)
	owner = backendtest.Token()
	c := f.claim("t", "fp", owner, 2*time.Hour)
	require.True(t, c.Claimed && c.TookOver, "%+v", c)
	assert.Equal(t, []byte("three"), c.Steps)
	f.sameExpiry("t", "takeover")
	ok, err = f.s.Release(ctx, backends.ReleaseParams{Scope: f.scope, Key: "t", Owner: owner})
	require.NoError(t, err)
	require.True(t, ok)
	f.sameExpiry("t", "release")
}

// TestCheckpointsAreKeptOrDropped follows the checkpoints of a record
// through the writes that keep, return or drop them.
func TestCheckpointsAreKeptOrDropped(t *testing.T) {
	f := newStepsFixture(t)
	ctx := t.Context()
	owner := backendtest.Token()
	require.True(t, f.claim("k", "fp", owner, time.Minute).Claimed)
	assert.False(t, f.checkpoint("k", backendtest.Token(), "x"), "another owner's claim")
	assert.False(t, f.checkpoint("absent", owner, "x"), "no record")
	assert.False(t, f.stepsKeyExists("absent"))
	require.True(t, f.checkpoint("k", owner, "a"))
	require.True(t, f.checkpoint("k", owner, "ab"), "replaced")
	assert.Equal(t, []byte("ab"), f.get("k").Steps)

	// The caller's own claim found again returns them (a re-send).
	c := f.claim("k", "fp", owner, time.Minute)
	require.True(t, c.Claimed, "%+v", c)
	assert.False(t, c.TookOver)
	assert.Equal(t, []byte("ab"), c.Steps)

	// Another's claim while the lease is live: the record, without them.
	c = f.claim("k", "fp", backendtest.Token(), time.Minute)
	require.False(t, c.Claimed)
	assert.Nil(t, c.Existing.Steps)

	// Release keeps a record with checkpoints, its lease ended.
	ok, err := f.s.Release(ctx, backends.ReleaseParams{Scope: f.scope, Key: "k", Owner: owner})
	require.NoError(t, err)
	require.True(t, ok)
	rec := f.get("k")
	require.Equal(t, backends.StatePending, rec.State)
	assert.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0), "the lease ended")
	assert.Equal(t, []byte("ab"), rec.Steps)
	assert.False(t, f.checkpoint("k", backendtest.Token(), "x"))
	c = f.claim("k", "other", backendtest.Token(), time.Minute)
	require.False(t, c.Claimed, "another fingerprint is refused: %+v", c)
	assert.Equal(t, backends.StatePending, c.Existing.State)
	next := backendtest.Token()
	c = f.claim("k", "fp", next, time.Minute)
	require.True(t, c.Claimed && c.TookOver, "%+v", c)
	assert.Equal(t, []byte("ab"), c.Steps)
	assert.False(t, f.checkpoint("k", owner, "x"), "the released owner is fenced off")

	// Empty checkpoints remove them; Release then deletes the record.
	require.True(t, f.checkpoint("k", next, ""))
	assert.False(t, f.stepsKeyExists("k"))
	assert.Nil(t, f.get("k").Steps)
	ok, err = f.s.Release(ctx, backends.ReleaseParams{Scope: f.scope, Key: "k", Owner: next})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Zero(t, f.get("k").State, "deleted")

	// Admin.Delete drops them with the record.
	owner = backendtest.Token()
	require.True(t, f.claim("d", "fp", owner, time.Minute).Claimed)
	require.True(t, f.checkpoint("d", owner, "x"))
	deleted, err := f.s.Delete(ctx, f.scope, "d")
	require.NoError(t, err)
	require.True(t, deleted)
	assert.False(t, f.stepsKeyExists("d"))
	c = f.claim("d", "fp", backendtest.Token(), time.Minute)
	require.True(t, c.Claimed)
	assert.Nil(t, c.Steps, "a new intent starts with none")

	// Expiry drops them with the record (here a completed one, whose
	// retention is the shortest: nothing has to happen before it ends).
	owner = backendtest.Token()
	require.True(t, f.claim("e", "", owner, time.Minute).Claimed)
	require.True(t, f.checkpoint("e", owner, "x"))
	ok, err = f.s.Complete(ctx, backends.CompleteParams{Scope: f.scope, Key: "e", Owner: owner, Outcome: []byte("v"), Retention: time.Millisecond})
	require.NoError(t, err)
	require.True(t, ok)
	backendtest.Elapse(t, f.s, time.Millisecond)
	assert.False(t, f.stepsKeyExists("e"), "expired with the record")
	c = f.claim("e", "", backendtest.Token(), time.Minute)
	require.True(t, c.Claimed && !c.TookOver, "%+v", c)
	assert.Nil(t, c.Steps)
}

// TestReplayDoesNotReadCheckpoints: a replay and an in-progress duplicate
// are the pipeline's two commands, whose replies carry the record alone.
func TestReplayDoesNotReadCheckpoints(t *testing.T) {
	c, n := countingClient(t)
	s := newStore(t, c, nil)
	warmPipelines(t, s, n)
	ctx := t.Context()
	scope, owner := backendtest.Scope(t), backendtest.Token()
	p := backends.ClaimParams{Scope: scope, Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour}
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	n.take()
	ok, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: "k", Owner: owner, Steps: make([]byte, 4096)})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []string{"evalsha"}, n.take(), "checkpoint")

	p.Owner = backendtest.Token()
	r, err = s.Claim(ctx, p)
	require.NoError(t, err)
	require.Equal(t, backends.StatePending, r.Existing.State)
	assert.Nil(t, r.Existing.Steps)
	assert.Equal(t, claimCommands, n.take(), "in progress")

	ok, err = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []string{"evalsha"}, n.take(), "complete")
	r, err = s.Claim(ctx, p)
	require.NoError(t, err)
	require.Equal(t, []byte("v"), r.Existing.Outcome)
	assert.Nil(t, r.Existing.Steps)
	assert.Equal(t, claimCommands, n.take(), "replay")
}

// TestListSkipsCheckpoints: List and Count walk records only, never the
// keys of their checkpoints (which get.lua would refuse as corrupt).
func TestListSkipsCheckpoints(t *testing.T) {
	c := singleClient(t)
	s := newStore(t, c, nonDefault(testPrefix+"liststeps-"+backendtest.Token()+":"))
	ctx := t.Context()
	scope := backendtest.Scope(t)
	for _, key := range []string{"a", "b"} {
		owner := backendtest.Token()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: key, Owner: owner, Steps: []byte("s")})
		require.NoError(t, err)
		require.True(t, ok)
	}
	for _, p := range []backends.ListParams{{}, {Scope: scope}, {Scope: scope, KeyPrefix: "a"}} {
		var listed []backends.Listed
		for {
			page, err := s.List(ctx, p)
			require.NoError(t, err)
			listed = append(listed, page.Records...)
			if p.Cursor = page.Next; p.Cursor == "" {
				break
			}
		}
		want := 2
		if p.KeyPrefix != "" {
			want = 1
		}
		require.Len(t, listed, want, "%+v", p)
		for _, r := range listed {
			assert.Nil(t, r.Record.Steps, "listed without checkpoints")
		}
	}
	counts, err := s.Count(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(2), counts.Stored)
	assert.Equal(t, int64(2), counts.Pending)
}

// TestCheckpointReSentAfterLostReply: the first reply of each write is lost
// after the server applied it, and go-redis re-sends it (see
// TestReSentAfterLostReply).
func TestCheckpointReSentAfterLostReply(t *testing.T) {
	ctx := t.Context()
	lost := func(t *testing.T, d *lossyDialer) {
		t.Helper()
		require.Equal(t, int32(1), d.dropped.Load(), "the first reply was lost")
		require.Equal(t, int32(2), d.dials.Load(), "and the command re-sent on a new connection")
	}
	claim := func(t *testing.T, s backends.Store, scope, owner string, lease time.Duration) backends.ClaimResult {
		t.Helper()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Fingerprint: []byte("fp"), Owner: owner, Lease: lease, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed, "%+v", r)
		return r
	}
	checkpoint := func(t *testing.T, s backends.Store, scope, owner string) bool {
		t.Helper()
		ok, err := s.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: "k", Owner: owner, Steps: []byte("steps")})
		require.NoError(t, err)
		return ok
	}

	t.Run("Checkpoint", func(t *testing.T) {
		s, d := lossyStore(t)
		scope, owner := backendtest.Scope(t), backendtest.Token()
		claim(t, s, scope, owner, time.Minute)
		d.arm(redislua.Checkpoint)
		require.True(t, checkpoint(t, s, scope, owner), "a re-sent Checkpoint reports true")
		lost(t, d)
		rec, err := s.(backends.Admin).Get(ctx, scope, "k")
		require.NoError(t, err)
		require.Equal(t, []byte("steps"), rec.Steps)
	})

	t.Run("ClaimTakeover", func(t *testing.T) {
		// The takeover applied; its re-send finds the caller's own claim
		// and returns the checkpoints it kept.
		s, d := lossyStore(t)
		scope, first := backendtest.Scope(t), backendtest.Token()
		claim(t, s, scope, first, time.Millisecond)
		require.True(t, checkpoint(t, s, scope, first))
		backendtest.Elapse(t, s, time.Millisecond)
		d.arm(redislua.Claim)
		r := claim(t, s, scope, backendtest.Token(), time.Minute)
		lost(t, d)
		require.Equal(t, []byte("steps"), r.Steps)
	})

	t.Run("Release", func(t *testing.T) {
		// A record with checkpoints is kept: the re-send ends its lease
		// again and reports true; the next claim takes it over.
		s, d := lossyStore(t)
		scope, owner := backendtest.Scope(t), backendtest.Token()
		claim(t, s, scope, owner, time.Minute)
		require.True(t, checkpoint(t, s, scope, owner))
		d.arm(redislua.Release)
		ok, err := s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "k", Owner: owner})
		require.NoError(t, err)
		lost(t, d)
		require.True(t, ok)
		r := claim(t, s, scope, backendtest.Token(), time.Minute)
		require.True(t, r.TookOver)
		require.Equal(t, []byte("steps"), r.Steps)
	})
}

// scriptUsec returns the server's count of EVALSHA calls and the
// microseconds they took (INFO commandstats).
func scriptUsec(t *testing.T, c redis.UniversalClient) (calls, usec int64) {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, field := range strings.Split(rest, ",") {
			name, v, _ := strings.Cut(field, "=")
			switch name {
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return calls, usec
}

// TestRenewCostIgnoresCheckpointsSize: a renewal that moves the expiry of
// a record with large checkpoints gives them the record's expiry without
// copying them. Redis runs one script at a time, and rewriting 8 MB of
// checkpoints on every renewal (GET, then SET PXAT) held the server about
// 30 ms each time; PEXPIREAT takes the same time whatever their size.
func TestRenewCostIgnoresCheckpointsSize(t *testing.T) {
	f := newStepsFixture(t)
	owner := backendtest.Token()
	f.claim("k", "fp", owner, time.Minute)
	require.True(t, f.checkpoint("k", owner, strings.Repeat("s", 8<<20)))
	const renewals = 10
	calls0, usec0 := scriptUsec(t, f.c)
	for i := range renewals {
		ok, err := f.s.Renew(t.Context(), backends.RenewParams{Scope: f.scope, Key: "k", Owner: owner, Lease: 2*time.Hour + time.Duration(i)*time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
	}
	calls, usec := scriptUsec(t, f.c)
	require.GreaterOrEqual(t, calls-calls0, int64(renewals))
	require.Less(t, usec-usec0, int64(renewals*5000), "the server spent %d µs in %d scripts: it copied the checkpoints", usec-usec0, calls-calls0)
	rec, err := f.s.Get(t.Context(), f.scope, "k")
	require.NoError(t, err)
	require.Len(t, rec.Steps, 8<<20, "the checkpoints are kept")
}
