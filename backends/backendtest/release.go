package backendtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func exerciseRelease(t *testing.T, newStore NewStore) {
	run(t, newStore, "ThenReclaim", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, []byte("a"), longLease, longRetention)
		require.True(e.t, e.release("k", owner))
		r := e.claim("k", Token(), []byte("b"), longLease, longRetention)
		require.True(e.t, r.Claimed, "a released key is claimable at once, with any fingerprint")
		require.False(e.t, r.TookOver)
		require.False(e.t, e.release("k", owner), "the first owner's token no longer releases anything")
	})

	run(t, newStore, "WrongOwner", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.False(e.t, e.release("k", Token()))
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		require.False(e.t, e.release("k", owner), "a completed record is never released")
		require.Equal(e.t, backends.StateCompleted, e.probe("k").Existing.State)
	})

	run(t, newStore, "ReSentReportsFalse", func(e *env) {
		// A re-sent Release finds nothing to delete and says so; the key is
		// in the state the first send left it in.
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.release("k", owner))
		require.False(e.t, e.release("k", owner), "nothing of the owner's is left")
		r := e.probe("k")
		require.True(e.t, r.Claimed, "released")
		require.False(e.t, r.TookOver)
	})
}
