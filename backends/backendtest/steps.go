package backendtest

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// stepsBlob is a checkpoint blob as opaque as the core's: every byte
// value, NUL and bytes that are not UTF-8 included.
func stepsBlob(tag byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i) ^ tag
	}
	return b
}

func (e *env) checkpoint(key, owner string, steps []byte) bool {
	e.t.Helper()
	ok, err := e.store.Checkpoint(e.ctx, backends.CheckpointParams{Scope: e.scope, Key: key, Owner: owner, Steps: steps})
	require.NoError(e.t, err)
	return ok
}

// takeOver waits for the lease of key to end on the store's clock and
// claims it with a fresh owner and a short lease, failing unless that is a
// takeover. It returns the new owner and the claim's checkpoints.
func (e *env) takeOver(key string, fp []byte, lease time.Duration) (string, []byte) {
	e.t.Helper()
	e.elapse(lease)
	owner := Token()
	r := e.claim(key, owner, fp, shortLease, longRetention)
	require.True(e.t, r.Claimed, "the lapsed claim is taken over: %+v", r)
	require.True(e.t, r.TookOver)
	return owner, r.Steps
}

func exerciseSteps(t *testing.T, newStore NewStore) {
	run(t, newStore, "NewClaimHasNone", func(e *env) {
		r := e.claim("k", Token(), nil, longLease, longRetention)
		require.True(e.t, r.Claimed)
		require.Nil(e.t, r.Steps)
	})

	run(t, newStore, "TakeoverReturnsThem", func(e *env) {
		owner, fp, steps := Token(), []byte("fp"), stepsBlob(1, 300)
		e.mustClaim("k", owner, fp, shortLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, steps))
		_, got := e.takeOver("k", fp, shortLease)
		require.Equal(e.t, steps, got, "a takeover resumes from the checkpoints")
	})

	run(t, newStore, "LastCheckpointWins", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, shortLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, stepsBlob(1, 10)))
		require.True(e.t, e.checkpoint("k", owner, stepsBlob(2, 20)))
		_, got := e.takeOver("k", nil, shortLease)
		require.Equal(e.t, stepsBlob(2, 20), got)
	})

	run(t, newStore, "ReSentClaimReturnsThem", func(e *env) {
		owner, steps := Token(), stepsBlob(3, 40)
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, steps))
		r := e.claim("k", owner, nil, longLease, longRetention)
		require.True(e.t, r.Claimed, "a re-sent claim reports Claimed")
		require.False(e.t, r.TookOver)
		require.Equal(e.t, steps, r.Steps, "and the claim's checkpoints, or the caller would run its steps again")
	})

	run(t, newStore, "FencedByOwner", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, shortLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, stepsBlob(1, 8)))
		require.False(e.t, e.checkpoint("k", Token(), stepsBlob(9, 8)), "a stranger checkpoints nothing")
		next, got := e.takeOver("k", nil, shortLease)
		require.Equal(e.t, stepsBlob(1, 8), got)
		require.False(e.t, e.checkpoint("k", owner, stepsBlob(7, 8)), "the owner taken over from checkpoints nothing")
		require.True(e.t, e.checkpoint("k", next, stepsBlob(4, 8)))
		_, got = e.takeOver("k", nil, shortLease)
		require.Equal(e.t, stepsBlob(4, 8), got, "only the live owner's checkpoint landed")
	})

	run(t, newStore, "LapsedOwnerMayCheckpoint", func(e *env) {
		// As Complete: a lapsed lease nobody took over is still the owner's.
		owner := Token()
		e.mustClaim("k", owner, nil, shortLease, longRetention)
		e.elapse(shortLease)
		require.True(e.t, e.checkpoint("k", owner, stepsBlob(5, 8)))
	})

	run(t, newStore, "ReSentCheckpointReportsTrue", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, stepsBlob(1, 8)))
		require.True(e.t, e.checkpoint("k", owner, stepsBlob(1, 8)))
	})

	run(t, newStore, "NothingButAPendingClaimTakesThem", func(e *env) {
		require.False(e.t, e.checkpoint("absent", Token(), stepsBlob(1, 8)), "an absent key")
		owner := Token()
		e.mustClaim("done", owner, nil, longLease, longRetention)
		require.True(e.t, e.complete("done", owner, []byte("v"), longRetention))
		require.False(e.t, e.checkpoint("done", owner, stepsBlob(1, 8)), "a completed record")
		e.requireCompleted(e.probe("done"), nil, []byte("v"), "unchanged")
		held := Token()
		e.mustClaim("held", held, nil, longLease, longRetention)
		require.True(e.t, e.hold("held", held, longLease, longRetention))
		require.False(e.t, e.checkpoint("held", held, stepsBlob(1, 8)), "a held record")
	})

	run(t, newStore, "CheckpointKeepsTheLease", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, shortLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, stepsBlob(1, 8)))
		e.takeOver("k", nil, shortLease) // the lease still ends when the claim said
	})

	run(t, newStore, "ReleaseKeepsARecordWithThem", func(e *env) {
		owner, fp, steps := Token(), []byte("fp"), stepsBlob(6, 64)
		e.mustClaim("k", owner, fp, longLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, steps))
		require.True(e.t, e.release("k", owner))
		other := e.claim("k", Token(), []byte("other"), longLease, longRetention)
		require.False(e.t, other.Claimed, "the record stays bound to its fingerprint")
		require.Equal(e.t, backends.StatePending, other.Existing.State)
		require.Equal(e.t, fp, other.Existing.Fingerprint)
		require.Nil(e.t, other.Existing.Steps, "Claim's Existing never carries checkpoints")
		r := e.claim("k", Token(), fp, longLease, longRetention)
		require.True(e.t, r.Claimed, "claimable at once: %+v", r)
		require.True(e.t, r.TookOver)
		require.Equal(e.t, steps, r.Steps)
	})

	run(t, newStore, "EmptyCheckpointRemovesThem", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, []byte("a"), longLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, stepsBlob(1, 8)))
		require.True(e.t, e.checkpoint("k", owner, nil))
		require.True(e.t, e.release("k", owner))
		r := e.claim("k", Token(), []byte("b"), longLease, longRetention)
		require.True(e.t, r.Claimed, "with no checkpoints the release deleted the record")
		require.False(e.t, r.TookOver)
		require.Nil(e.t, r.Steps)
	})

	run(t, newStore, "HoldKeepsThem", func(e *env) {
		owner, steps := Token(), stepsBlob(7, 33)
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, steps))
		require.True(e.t, e.hold("k", owner, shortLease, longRetention))
		_, got := e.takeOver("k", nil, shortLease)
		require.Equal(e.t, steps, got, "a held key run again resumes from its checkpoints")
	})

	run(t, newStore, "ExpiryDropsThem", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, shortLease, shortLease)
		require.True(e.t, e.checkpoint("k", owner, stepsBlob(1, 8)))
		e.elapse(shortLease)
		r := e.claim("k", Token(), nil, longLease, longRetention)
		require.True(e.t, r.Claimed)
		require.Nil(e.t, r.Steps, "an expired record is another intent's: none of its checkpoints")
	})

	run(t, newStore, "ResolveKeepsThemUnlessExpired", func(e *env) {
		steps := stepsBlob(11, 16)
		for key, retention := range map[string]time.Duration{"lapsed": longRetention, "expired": shortLease} {
			owner := Token()
			e.mustClaim(key, owner, nil, shortLease, retention)
			require.True(e.t, e.checkpoint(key, owner, steps))
		}
		e.elapse(shortLease)
		for key, want := range map[string][]byte{"lapsed": steps, "expired": nil} {
			require.True(e.t, e.resolve(key, nil, []byte("v")).Resolved, key)
			rec, _, live := e.get(key)
			require.True(e.t, live, key)
			require.Equal(e.t, backends.StateCompleted, rec.State, key)
			require.Equal(e.t, want, rec.Steps, "%s: Resolve keeps a live record's checkpoints; an expired record's die with it", key)
		}
	})

	run(t, newStore, "ReturnedBytesAreTheCallers", func(e *env) {
		owner, steps := Token(), stepsBlob(8, 50)
		e.mustClaim("k", owner, nil, longLease, longRetention)
		p := backends.CheckpointParams{Scope: e.scope, Key: "k", Owner: owner, Steps: bytes.Clone(steps)}
		ok, err := e.store.Checkpoint(e.ctx, p)
		require.NoError(e.t, err)
		require.True(e.t, ok)
		clear(p.Steps) // the store kept no slice of its parameters
		r := e.claim("k", owner, nil, longLease, longRetention)
		require.Equal(e.t, steps, r.Steps)
		clear(r.Steps) // nor does it share one with the caller
		require.Equal(e.t, steps, e.claim("k", owner, nil, longLease, longRetention).Steps)
	})

	run(t, newStore, "Large", func(e *env) {
		owner, steps := Token(), stepsBlob(9, 2<<20)
		e.mustClaim("k", owner, nil, shortLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, steps))
		_, got := e.takeOver("k", nil, shortLease)
		require.True(e.t, bytes.Equal(steps, got), "2 MiB of checkpoints come back whole")
	})

	run(t, newStore, "AdminGetShowsThem", func(e *env) {
		a, ok := backends.As[backends.Admin](e.store)
		if !ok {
			e.t.Skip("the store has no Admin")
		}
		owner, steps := Token(), stepsBlob(10, 21)
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.checkpoint("k", owner, steps))
		rec, err := a.Get(e.ctx, e.scope, "k")
		require.NoError(e.t, err)
		require.Equal(e.t, steps, rec.Steps)
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		rec, err = a.Get(e.ctx, e.scope, "k")
		require.NoError(e.t, err)
		require.Equal(e.t, backends.StateCompleted, rec.State)
		require.Equal(e.t, steps, rec.Steps, "a completed record keeps them for operators")
		require.Nil(e.t, e.probe("k").Existing.Steps, "a replay does not read them")
	})
}
