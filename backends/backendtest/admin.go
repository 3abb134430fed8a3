package backendtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// The behaviours of backends.Admin. Each skips when the store does not
// implement it.

// admin returns e's store as a backends.Admin, or skips.
func (e *env) admin() backends.Admin {
	e.t.Helper()
	a, ok := backends.As[backends.Admin](e.store)
	if !ok {
		e.t.Skip("store does not implement backends.Admin")
	}
	return a
}

// get returns the record Get reports, its ExpiresIn, and whether it is
// live (State not zero).
func (e *env) get(key string) (backends.Record, time.Duration, bool) {
	e.t.Helper()
	rec, err := e.admin().Get(e.ctx, e.scope, key)
	require.NoError(e.t, err)
	if rec.State == 0 {
		require.Zero(e.t, rec, "an absent key is the zero Record")
	}
	return rec, rec.ExpiresIn, rec.State != 0
}

func (e *env) del(key string) bool {
	e.t.Helper()
	deleted, err := e.admin().Delete(e.ctx, e.scope, key)
	require.NoError(e.t, err)
	return deleted
}

func exerciseAdmin(t *testing.T, newStore NewStore) {
	run(t, newStore, "Get", func(e *env) {
		e.admin()
		owner := Token()
		_, _, found := e.get("absent")
		require.False(e.t, found, "an absent key is not found")

		e.mustClaim("k", owner, []byte("fp"), longLease, longRetention)
		rec, expiresIn, found := e.get("k")
		require.True(e.t, found, "pending")
		require.Equal(e.t, backends.StatePending, rec.State)
		require.Equal(e.t, []byte("fp"), rec.Fingerprint)
		require.Nil(e.t, rec.Outcome)
		require.Greater(e.t, rec.LeaseRemaining, longLease-10*time.Second)
		require.LessOrEqual(e.t, rec.LeaseRemaining, longLease)
		require.Greater(e.t, expiresIn, longRetention-10*time.Second)
		require.LessOrEqual(e.t, expiresIn, longRetention)

		require.True(e.t, e.complete("k", owner, []byte("outcome"), 2*longRetention),
			"Get took the claim from nobody: its owner still completes")
		rec, expiresIn, found = e.get("k")
		require.True(e.t, found, "completed")
		require.Equal(e.t, backends.StateCompleted, rec.State)
		require.Equal(e.t, []byte("fp"), rec.Fingerprint)
		require.Equal(e.t, []byte("outcome"), rec.Outcome)
		require.Zero(e.t, rec.LeaseRemaining)
		require.Greater(e.t, expiresIn, 2*longRetention-10*time.Second, "Complete restarts retention")
		require.LessOrEqual(e.t, expiresIn, 2*longRetention)

		e.mustClaim("nofp", Token(), nil, longLease, longRetention)
		rec, _, found = e.get("nofp")
		require.True(e.t, found)
		require.Empty(e.t, rec.Fingerprint, "a claim without a fingerprint has none")
	})

	run(t, newStore, "GetLapsedAndExpired", func(e *env) {
		e.admin()
		owner := Token()
		e.mustClaim("lapsed", Token(), nil, shortLease, longRetention)
		e.mustClaim("done", owner, nil, longLease, longRetention)
		require.True(e.t, e.complete("done", owner, []byte("v"), shortLease))
		e.mustClaim("pending", Token(), nil, shortLease, shortLease)
		e.elapse(shortLease)

		rec, expiresIn, found := e.get("lapsed")
		require.True(e.t, found, "a pending record whose lease lapsed is still there")
		require.Equal(e.t, backends.StatePending, rec.State)
		require.LessOrEqual(e.t, rec.LeaseRemaining, time.Duration(0))
		require.Greater(e.t, expiresIn, time.Duration(0))
		for _, key := range []string{"done", "pending"} {
			_, _, found := e.get(key)
			require.False(e.t, found, "%s: an expired record is absent", key)
		}
	})

	run(t, newStore, "GetPendingExpiresAtLeaseEnd", func(e *env) {
		// Decision A as an operator sees it: a pending record's expiry is
		// at least its lease end, and a renewal moves it.
		e.admin()
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, shortLease)
		rec, expiresIn, found := e.get("k")
		require.True(e.t, found)
		require.GreaterOrEqual(e.t, expiresIn, rec.LeaseRemaining, "expiry at least the lease end")
		require.True(e.t, e.renew("k", owner, 2*longLease))
		rec, expiresIn, found = e.get("k")
		require.True(e.t, found)
		require.Greater(e.t, rec.LeaseRemaining, 2*longLease-10*time.Second)
		require.GreaterOrEqual(e.t, expiresIn, rec.LeaseRemaining, "a renewal extends the record's life")
	})

	run(t, newStore, "GetExtremeDurations", func(e *env) {
		e.admin()
		owner := Token()
		e.mustClaim("k", owner, nil, math64, math64)
		rec, expiresIn, found := e.get("k")
		require.True(e.t, found)
		require.Greater(e.t, rec.LeaseRemaining, 100*365*24*time.Hour, "no wrap")
		require.Greater(e.t, expiresIn, 100*365*24*time.Hour, "no wrap")
		require.True(e.t, e.complete("k", owner, []byte("v"), math64))
		_, expiresIn, found = e.get("k")
		require.True(e.t, found)
		require.Greater(e.t, expiresIn, 100*365*24*time.Hour, "no wrap")
	})

	run(t, newStore, "DeletePendingFencesOwner", func(e *env) {
		e.admin()
		stale, fresh := Token(), Token()
		e.mustClaim("k", stale, []byte("a"), longLease, longRetention)
		require.True(e.t, e.del("k"))
		_, _, found := e.get("k")
		require.False(e.t, found, "deleted")

		fenced := func(when string) {
			e.t.Helper()
			require.False(e.t, e.complete("k", stale, []byte("stale"), longRetention), "%s: stale owner completes nothing", when)
			require.False(e.t, e.renew("k", stale, longLease), "%s: stale owner renews nothing", when)
			require.False(e.t, e.release("k", stale), "%s: stale owner releases nothing", when)
		}
		fenced("after delete")
		_, _, found = e.get("k")
		require.False(e.t, found, "the stale owner's writes recreated nothing")

		r := e.claim("k", fresh, []byte("b"), longLease, longRetention)
		require.True(e.t, r.Claimed, "a deleted key is claimable at once, with any fingerprint")
		require.False(e.t, r.TookOver)
		fenced("after a new claim")
		require.True(e.t, e.complete("k", fresh, []byte("fresh"), longRetention))
		rec, _, found := e.get("k")
		require.True(e.t, found)
		require.Equal(e.t, []byte("fresh"), rec.Outcome)
	})

	run(t, newStore, "DeleteCompleted", func(e *env) {
		e.admin()
		base := e.scope
		// Two pairs whose naive concatenation collides: deleting one must
		// not touch the other.
		pairs := [][2]string{{base + ":a", "b"}, {base, "a:b"}}
		for _, p := range pairs {
			e.scope = p[0]
			owner := Token()
			e.mustClaim(p[1], owner, []byte("a"), longLease, longRetention)
			require.True(e.t, e.complete(p[1], owner, []byte(p[0]), longRetention))
		}
		e.scope = pairs[0][0]
		require.True(e.t, e.del(pairs[0][1]))
		e.scope = pairs[1][0]
		rec, _, found := e.get(pairs[1][1])
		require.True(e.t, found, "the other pair is untouched")
		require.Equal(e.t, []byte(pairs[1][0]), rec.Outcome)

		e.scope = pairs[0][0]
		r := e.claim(pairs[0][1], Token(), []byte("b"), longLease, longRetention)
		require.True(e.t, r.Claimed, "a deleted completed key is a new intent, whatever the fingerprint")
		require.False(e.t, r.TookOver)
	})

	run(t, newStore, "DeleteAbsent", func(e *env) {
		e.admin()
		owner := Token()
		require.False(e.t, e.del("absent"), "nothing to delete")
		e.mustClaim("expired", owner, nil, longLease, longRetention)
		require.True(e.t, e.complete("expired", owner, []byte("v"), shortLease))
		e.mustClaim("twice", Token(), nil, longLease, longRetention)
		e.elapse(shortLease)
		require.False(e.t, e.del("expired"), "an expired record is absent")
		require.True(e.t, e.del("twice"))
		require.False(e.t, e.del("twice"), "a second delete finds nothing")
	})

	run(t, newStore, "DeleteWakesWatchers", func(e *env) {
		a := e.admin()
		w := e.watcher()
		e.mustClaim("k", Token(), nil, longLease, longRetention)
		changed, stop, err := w.Watch(e.ctx, e.scope, "k")
		require.NoError(e.t, err)
		defer stop()
		deleted, err := a.Delete(e.ctx, e.scope, "k")
		require.NoError(e.t, err)
		require.True(e.t, deleted)
		e.awaitWake(changed, "a delete")
	})
}
