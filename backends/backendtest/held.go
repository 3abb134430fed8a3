package backendtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// The behaviours of the held state (Store.Hold, Store.LeaseHeld).

func (e *env) hold(key, owner string, hold, retention time.Duration) bool {
	e.t.Helper()
	ok, err := e.store.Hold(e.ctx, backends.HoldParams{
		Scope: e.scope, Key: key, Owner: owner, For: hold,
		Code: "provider_timeout", Message: "the provider did not answer in 10s", Retention: retention,
	})
	require.NoError(e.t, err)
	return ok
}

func (e *env) leaseHeld(key, owner string, lease time.Duration) backends.LeaseHeldResult {
	e.t.Helper()
	r, err := e.store.LeaseHeld(e.ctx, backends.LeaseHeldParams{Scope: e.scope, Key: key, Owner: owner, Lease: lease})
	require.NoError(e.t, err)
	return r
}

// mustHold claims key with fingerprint fp and holds it for hold.
func (e *env) mustHold(key, owner string, fp []byte, hold time.Duration) {
	e.t.Helper()
	e.mustClaim(key, owner, fp, longLease, longRetention)
	require.True(e.t, e.hold(key, owner, hold, longRetention), "the owner of a pending claim holds it")
}

// requireHeld fails unless r reports a held record with fingerprint fp
// whose hold has not ended.
func (e *env) requireHeld(r backends.ClaimResult, fp []byte, msg string) {
	e.t.Helper()
	require.False(e.t, r.Claimed, "%s: a held key is not claimable while its hold is live", msg)
	require.Equal(e.t, backends.StateHeld, r.Existing.State, msg)
	require.Equal(e.t, fp, r.Existing.Fingerprint, msg)
	require.Nil(e.t, r.Existing.Outcome, msg)
	require.Positive(e.t, r.Existing.Held.Remaining, msg)
	require.Equal(e.t, "provider_timeout", r.Existing.Held.Code, msg)
	require.Equal(e.t, "the provider did not answer in 10s", r.Existing.Held.Message, msg)
	require.GreaterOrEqual(e.t, r.Existing.Age, time.Duration(0), msg)
}

func exerciseHeld(t *testing.T, newStore NewStore) {
	run(t, newStore, "BlocksClaims", func(e *env) {
		e.mustHold("k", Token(), []byte("fp"), longLease)
		r := e.claim("k", Token(), []byte("fp"), longLease, longRetention)
		e.requireHeld(r, []byte("fp"), "a matching claim")
		require.LessOrEqual(e.t, r.Existing.Held.Remaining, longLease)
		require.Greater(e.t, r.Existing.Held.Remaining, longLease-10*time.Second, "the hold left is true to the store's clock")
		require.LessOrEqual(e.t, r.Existing.LeaseRemaining, time.Duration(0), "no reconciler lease yet")
		e.requireHeld(e.claim("k", Token(), []byte("other"), longLease, longRetention), []byte("fp"), "a mismatched claim")
	})

	run(t, newStore, "FencesTheOwner", func(e *env) {
		owner := Token()
		e.mustHold("k", owner, []byte("fp"), longLease)
		require.False(e.t, e.complete("k", owner, []byte("late"), longRetention), "a held owner never completes")
		require.False(e.t, e.renew("k", owner, longLease), "a held owner never renews")
		require.False(e.t, e.release("k", owner), "a held owner never releases")
		require.True(e.t, e.hold("k", owner, longLease, longRetention), "a re-sent Hold reports true")
		e.requireHeld(e.probe("k"), []byte("fp"), "still held")
	})

	run(t, newStore, "OnlyThePendingOwnerHolds", func(e *env) {
		require.False(e.t, e.hold("absent", Token(), longLease, longRetention), "absent")
		owner := Token()
		e.mustClaim("pending", owner, nil, longLease, longRetention)
		require.False(e.t, e.hold("pending", Token(), longLease, longRetention), "another owner")
		e.requirePending(e.probe("pending"), nil, "untouched")
		e.mustClaim("completed", owner, nil, longLease, longRetention)
		require.True(e.t, e.complete("completed", owner, []byte("v"), longRetention))
		require.False(e.t, e.hold("completed", owner, longLease, longRetention), "completed")
		e.requireCompleted(e.probe("completed"), nil, []byte("v"), "untouched")
	})

	run(t, newStore, "LapsedLeaseStillHolds", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, []byte("fp"), shortLease, longRetention)
		e.elapse(shortLease)
		require.True(e.t, e.hold("k", owner, longLease, longRetention), "nobody took it over")
		e.requireHeld(e.probe("k"), []byte("fp"), "held")
	})

	run(t, newStore, "EndsThenTakenOver", func(e *env) {
		e.mustHold("k", Token(), []byte("fp"), shortLease)
		e.elapse(shortLease)
		r := e.claim("k", Token(), []byte("other"), longLease, longRetention)
		require.False(e.t, r.Claimed, "an ended hold is taken over by a matching claim only")
		require.Equal(e.t, backends.StateHeld, r.Existing.State)
		require.LessOrEqual(e.t, r.Existing.Held.Remaining, time.Duration(0), "the hold has ended")
		r = e.claim("k", Token(), nil, longLease, longRetention)
		require.True(e.t, r.Claimed)
		require.True(e.t, r.TookOver, "an ended hold is taken over, as a lapsed lease")
		e.requirePending(e.probe("k"), []byte("fp"), "the takeover keeps the fingerprint")
	})

	run(t, newStore, "OutlivesRetention", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.hold("k", owner, longLease, shortLease))
		e.elapse(shortLease)
		e.requireHeld(e.probe("k"), nil, "a held record lives at least until its hold ends")
	})

	run(t, newStore, "RetentionCountsFromTheHold", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.hold("k", owner, shortLease, shortLease))
		e.elapse(shortLease)
		r := e.probe("k")
		require.True(e.t, r.Claimed)
		require.False(e.t, r.TookOver, "the held record lived p.Retention from the hold, not the claim's retention: it expired")
	})

	run(t, newStore, "UntilResolved", func(e *env) {
		e.mustHold("k", Token(), nil, backends.HoldUntilResolved)
		r := e.probe("k")
		e.requireHeld(r, nil, "held")
		require.True(e.t, r.Existing.Held.Unbounded(), "HoldUntilResolved never wraps into a short hold: %v", r.Existing.Held.Remaining)
	})

	run(t, newStore, "Resolved", func(e *env) {
		owner := Token()
		e.mustHold("k", owner, []byte("fp"), longLease)
		res := e.resolve("k", []byte("other"), []byte("x"))
		require.False(e.t, res.Resolved, "a mismatched fingerprint resolves nothing")
		require.Equal(e.t, backends.StateHeld, res.Existing.State)
		require.True(e.t, e.resolve("k", nil, []byte("reconciled")).Resolved)
		require.False(e.t, e.complete("k", owner, []byte("late"), longRetention), "the held owner's late completion is refused")
		e.requireCompleted(e.probe("k"), []byte("fp"), []byte("reconciled"), "resolved")
	})

	run(t, newStore, "ReconcilerLease", func(e *env) {
		e.mustHold("k", Token(), []byte("fp"), longLease)
		first, second := Token(), Token()
		require.True(e.t, e.leaseHeld("k", first, longLease).Leased)
		require.True(e.t, e.leaseHeld("k", first, longLease).Leased, "a re-send (or a renewal) by the lease's owner")
		other := e.leaseHeld("k", second, longLease)
		require.False(e.t, other.Leased, "one reconciler at a time")
		require.Equal(e.t, backends.StateHeld, other.Existing.State)
		require.Positive(e.t, other.Existing.LeaseRemaining, "the live reconciler lease is reported")
		require.False(e.t, e.resolveAs("k", second, []byte("fp"), []byte("theirs")).Resolved, "another token's Resolve is fenced off by the live lease")
		e.requireHeld(e.probe("k"), []byte("fp"), "a reconciler lease keeps the record held")
		require.True(e.t, e.resolveAs("k", first, []byte("fp"), []byte("mine")).Resolved)
		e.requireCompleted(e.probe("k"), []byte("fp"), []byte("mine"), "resolved by the lease holder")
		require.False(e.t, e.leaseHeld("k", second, longLease).Leased, "a completed record is not leased")
	})

	run(t, newStore, "LapsedReconcilerIsFenced", func(e *env) {
		e.mustHold("k", Token(), nil, longLease)
		slow, fast := Token(), Token()
		require.True(e.t, e.leaseHeld("k", slow, shortLease).Leased)
		e.elapse(shortLease)
		require.True(e.t, e.leaseHeld("k", fast, longLease).Leased, "a lapsed reconciler lease is taken over")
		require.False(e.t, e.resolveAs("k", slow, nil, []byte("slow")).Resolved, "the slow reconciler is fenced off")
		require.True(e.t, e.resolveAs("k", fast, nil, []byte("fast")).Resolved)
		e.requireCompleted(e.probe("k"), nil, []byte("fast"), "one resolution")
	})

	run(t, newStore, "ReconcilerLeaseOutlivesHold", func(e *env) {
		e.mustHold("k", Token(), nil, shortLease)
		require.True(e.t, e.leaseHeld("k", Token(), longLease).Leased)
		e.elapse(shortLease)
		r := e.probe("k")
		require.False(e.t, r.Claimed, "a live reconciler lease blocks a takeover after the hold ends")
		require.Equal(e.t, backends.StateHeld, r.Existing.State)
	})

	run(t, newStore, "LeaseHeldOnlyOnHeld", func(e *env) {
		r := e.leaseHeld("absent", Token(), longLease)
		require.False(e.t, r.Leased)
		require.Zero(e.t, r.Existing.State, "absent")
		e.mustClaim("pending", Token(), nil, longLease, longRetention)
		r = e.leaseHeld("pending", Token(), longLease)
		require.False(e.t, r.Leased, "a running claim is not reconciled")
		require.Equal(e.t, backends.StatePending, r.Existing.State)
	})

	run(t, newStore, "AdminGetReportsHeld", func(e *env) {
		e.mustHold("k", Token(), []byte("fp"), longLease)
		if _, ok := backends.As[backends.Admin](e.store); !ok {
			e.t.Skip("store does not implement backends.Admin")
		}
		rec, expiresIn, found := e.get("k")
		require.True(e.t, found)
		require.Equal(e.t, backends.StateHeld, rec.State)
		require.Equal(e.t, "provider_timeout", rec.Held.Code)
		require.GreaterOrEqual(e.t, expiresIn, rec.Held.Remaining-time.Second, "the record lives at least until the hold ends")
	})
}
