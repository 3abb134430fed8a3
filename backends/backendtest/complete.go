package backendtest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func exerciseComplete(t *testing.T, newStore NewStore) {
	run(t, newStore, "WrongOwner", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.False(e.t, e.complete("k", Token(), []byte("x"), longRetention), "a foreign token must not complete")
		require.False(e.t, e.complete("absent", owner, []byte("x"), longRetention), "an absent key must not complete")
		e.requirePending(e.probe("k"), nil, "the record is still the owner's pending claim")
		require.True(e.t, e.complete("k", owner, []byte("y"), longRetention))
		require.False(e.t, e.complete("k", owner, []byte("z"), longRetention), "a completed record is never completed with another outcome")
		require.False(e.t, e.complete("k", Token(), []byte("y"), longRetention), "nor by another owner")
		e.requireCompleted(e.probe("k"), nil, []byte("y"), "the first outcome stays")
	})

	run(t, newStore, "ReSentReportsApplied", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention),
			"a retried Complete whose first reply was lost still reports applied")
		e.requireCompleted(e.probe("k"), nil, []byte("v"), "one outcome")
	})

	run(t, newStore, "AfterLapsedLease", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, shortLease, longRetention)
		e.elapse(shortLease)
		require.True(e.t, e.complete("k", owner, []byte("late"), longRetention),
			"an owner whose lease lapsed but was not taken over still completes")
	})

	run(t, newStore, "RestartsRetention", func(e *env) {
		// The completed record lives Retention from completion, not from
		// the claim, and not the lease's length.
		owner := Token()
		e.mustClaim("k", owner, []byte("fp"), longLease, shortLease)
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		e.elapse(shortLease)
		e.requireCompleted(e.probe("k"), []byte("fp"), []byte("v"), "the claim's short retention no longer applies")

		owner = Token()
		e.mustClaim("short", owner, nil, longLease, longRetention)
		require.True(e.t, e.complete("short", owner, []byte("v"), shortLease))
		e.elapse(shortLease)
		r := e.probe("short")
		require.True(e.t, r.Claimed, "a completed record expires Retention after completion, even with a longer lease")
		require.False(e.t, r.TookOver)
	})
}
