package backendtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func exerciseResolve(t *testing.T, newStore NewStore) {
	run(t, newStore, "Absent", func(e *env) {
		require.True(e.t, e.resolve("k", []byte("fp"), []byte("reconciled")).Resolved)
		e.requireCompleted(e.claim("k", Token(), []byte("fp"), longLease, longRetention), []byte("fp"), []byte("reconciled"), "resolved")
	})

	run(t, newStore, "Pending", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, []byte("fp"), longLease, longRetention)
		res := e.resolve("k", []byte("other"), []byte("x"))
		require.False(e.t, res.Resolved, "a mismatched fingerprint resolves nothing")
		require.Equal(e.t, backends.StatePending, res.Existing.State)
		require.Equal(e.t, []byte("fp"), res.Existing.Fingerprint)
		require.True(e.t, e.resolve("k", []byte("fp"), []byte("reconciled")).Resolved)
		require.False(e.t, e.complete("k", owner, []byte("late"), longRetention), "the held owner no longer completes")
		e.requireCompleted(e.probe("k"), []byte("fp"), []byte("reconciled"), "resolved")
	})

	run(t, newStore, "NeverOverwrites", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.complete("k", owner, []byte("first"), longRetention))
		res := e.resolve("k", nil, []byte("second"))
		require.False(e.t, res.Resolved)
		require.Equal(e.t, backends.StateCompleted, res.Existing.State)
		require.Equal(e.t, []byte("first"), res.Existing.Outcome)
		res = e.resolveAs("k", owner, nil, []byte("second"))
		require.False(e.t, res.Resolved, "not even with the completing owner's token")
	})

	run(t, newStore, "EmptyFingerprintKeepsStored", func(e *env) {
		// Issue 13 (4): a Resolve without a fingerprint keeps the key bound.
		e.mustClaim("k", Token(), []byte("original"), longLease, longRetention)
		require.True(e.t, e.resolve("k", nil, []byte("reconciled")).Resolved)
		e.requireCompleted(e.probe("k"), []byte("original"), []byte("reconciled"), "the stored fingerprint stays")
	})

	run(t, newStore, "BindsRecordWithoutFingerprint", func(e *env) {
		// Decision C: an empty stored fingerprint matches any, and a
		// non-empty one given binds it.
		e.mustClaim("k", Token(), nil, longLease, longRetention)
		require.True(e.t, e.resolve("k", []byte("given"), []byte("reconciled")).Resolved)
		e.requireCompleted(e.probe("k"), []byte("given"), []byte("reconciled"), "bound")
	})

	run(t, newStore, "ReSentReportsResolved", func(e *env) {
		// Issue 13 (7), decision D: a re-send (same Owner, same outcome)
		// after the first send applied reports Resolved; anything else
		// reports the completed record.
		owner := Token()
		e.mustClaim("pending", Token(), []byte("fp"), longLease, longRetention)
		for _, key := range []string{"absent", "pending"} {
			require.True(e.t, e.resolveAs(key, owner, []byte("fp"), []byte("v")).Resolved, key)
			require.True(e.t, e.resolveAs(key, owner, []byte("fp"), []byte("v")).Resolved, "%s: a re-send reports Resolved", key)
			require.True(e.t, e.resolveAs(key, owner, nil, []byte("v")).Resolved, "%s: the re-send's fingerprint is checked like any", key)
			res := e.resolveAs(key, Token(), []byte("fp"), []byte("v"))
			require.False(e.t, res.Resolved, "%s: another Resolve of the same outcome is not a re-send", key)
			require.Equal(e.t, []byte("v"), res.Existing.Outcome, key)
			res = e.resolveAs(key, owner, []byte("fp"), []byte("w"))
			require.False(e.t, res.Resolved, "%s: the same token with another outcome is not a re-send", key)
			require.Equal(e.t, []byte("v"), res.Existing.Outcome, key)
			e.requireCompleted(e.probe(key), []byte("fp"), []byte("v"), key)
		}
	})

	run(t, newStore, "EmptyOwnerIsNeverAReSend", func(e *env) {
		require.True(e.t, e.resolveAs("k", "", nil, []byte("v")).Resolved)
		res := e.resolveAs("k", "", nil, []byte("v"))
		require.False(e.t, res.Resolved, "without an owner token a repeat cannot be told from another Resolve")
		require.Equal(e.t, []byte("v"), res.Existing.Outcome)
	})

	run(t, newStore, "LapsedPendingKeepsFingerprint", func(e *env) {
		e.mustClaim("k", Token(), []byte("original"), shortLease, longRetention)
		e.elapse(shortLease)
		require.True(e.t, e.resolve("k", nil, []byte("reconciled")).Resolved)
		e.requireCompleted(e.probe("k"), []byte("original"), []byte("reconciled"), "a lapsed claim still binds the key")
	})
}
