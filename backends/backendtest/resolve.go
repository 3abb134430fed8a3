package backendtest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func exerciseResolve(t *testing.T, newStore NewStore) {
	run(t, newStore, "Absent", func(e *env) {
		require.True(e.t, e.resolve("k", []byte("fp"), []byte("reconciled")).Resolved)
		e.requireCompleted(e.claim("k", Token(), []byte("fp"), longLease, longRetention), []byte("fp"), []byte("reconciled"), "resolved")
	})

	run(t, newStore, "LapsedPending", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, []byte("fp"), shortLease, longRetention)
		e.elapse(shortLease)
		res := e.resolve("k", []byte("other"), []byte("x"))
		require.False(e.t, res.Resolved, "a mismatched fingerprint resolves nothing")
		require.Equal(e.t, backends.StatePending, res.Existing.State)
		require.Equal(e.t, []byte("fp"), res.Existing.Fingerprint)
		require.True(e.t, e.resolve("k", []byte("fp"), []byte("reconciled")).Resolved)
		require.False(e.t, e.complete("k", owner, []byte("late"), longRetention), "the lapsed owner no longer completes")
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
		e.mustHold("k", Token(), []byte("original"), longLease)
		require.True(e.t, e.resolve("k", nil, []byte("reconciled")).Resolved)
		e.requireCompleted(e.probe("k"), []byte("original"), []byte("reconciled"), "the stored fingerprint stays")
	})

	run(t, newStore, "BindsRecordWithoutFingerprint", func(e *env) {
		// Decision C: an empty stored fingerprint matches any, and a
		// non-empty one given binds it.
		e.mustHold("k", Token(), nil, longLease)
		require.True(e.t, e.resolve("k", []byte("given"), []byte("reconciled")).Resolved)
		e.requireCompleted(e.probe("k"), []byte("given"), []byte("reconciled"), "bound")
	})

	run(t, newStore, "ReSentReportsResolved", func(e *env) {
		// Issue 13 (7), decision D: a re-send (same Owner, same outcome)
		// after the first send applied reports Resolved; anything else
		// reports the completed record.
		owner := Token()
		e.mustHold("held", Token(), []byte("fp"), longLease)
		for _, key := range []string{"absent", "held"} {
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

	run(t, newStore, "LeavesLiveClaim", func(e *env) {
		// A pending record whose owner's lease is live is left as it is,
		// and reported.
		owner := Token()
		e.mustClaim("k", owner, []byte("fp"), longLease, longRetention)
		for _, fp := range [][]byte{[]byte("fp"), nil} {
			res := e.resolve("k", fp, []byte("reconciled"))
			require.False(e.t, res.Resolved, "a live claim is left (fingerprint %q)", fp)
			require.Equal(e.t, backends.StatePending, res.Existing.State)
			require.Equal(e.t, []byte("fp"), res.Existing.Fingerprint)
			require.Nil(e.t, res.Existing.Outcome)
			require.Positive(e.t, res.Existing.LeaseRemaining, "the owner's lease left")
			require.LessOrEqual(e.t, res.Existing.LeaseRemaining, longLease)
		}
		require.True(e.t, e.renew("k", owner, longLease), "the owner keeps its claim")
		require.True(e.t, e.complete("k", owner, []byte("owner's"), longRetention), "and completes it")
		e.requireCompleted(e.probe("k"), []byte("fp"), []byte("owner's"), "the owner's outcome stays")
	})

	run(t, newStore, "RacesClaim", func(e *env) {
		// A Resolve and a Claim of one key, concurrently: one of
		// them wins, never both (a Resolve that read the key absent, then
		// wrote over the claim taken meanwhile, fails here).
		const keys = 40
		for i := range keys {
			key := "race-" + Token()[:8]
			owner := Token()
			var (
				wg       sync.WaitGroup
				claim    backends.ClaimResult
				resolved backends.ResolveResult
				cErr     error
				rErr     error
			)
			doClaim := func() {
				defer wg.Done()
				claim, cErr = e.store.Claim(e.ctx, e.claimParams(key, owner, nil, longLease, longRetention))
			}
			doResolve := func() {
				defer wg.Done()
				resolved, rErr = e.store.Resolve(e.ctx, backends.ResolveParams{
					Scope: e.scope, Key: key, Owner: Token(), Outcome: []byte("reconciled"), Retention: longRetention,
				})
			}
			wg.Add(2)
			if i%2 == 0 { // both orders of start
				go doClaim()
				go doResolve()
			} else {
				go doResolve()
				go doClaim()
			}
			wg.Wait()
			require.NoError(e.t, cErr)
			require.NoError(e.t, rErr)
			require.NotEqual(e.t, claim.Claimed, resolved.Resolved, "round %d: exactly one of the claim (%+v) and the resolve (%+v) wins", i, claim, resolved)
			if claim.Claimed {
				require.Equal(e.t, backends.StatePending, resolved.Existing.State, "round %d", i)
				require.True(e.t, e.complete(key, owner, []byte("owner's"), longRetention), "round %d: the owner keeps its claim", i)
			} else {
				require.Equal(e.t, backends.StateCompleted, claim.Existing.State, "round %d", i)
			}
		}
	})

	run(t, newStore, "OnlyLeased", func(e *env) {
		// ResolveParams.OnlyLeased resolves a held record its token
		// leased, and nothing else: a Reconciler's late verdict never
		// lands on the key's next intent, nor over a takeover's claim.
		fp := []byte("fp")
		res := e.resolveLeased("absent", Token(), fp, []byte("late"))
		require.False(e.t, res.Resolved, "an absent key is the next intent's")
		require.Zero(e.t, res.Existing.State)
		require.True(e.t, e.claim("absent", Token(), []byte("next"), longLease, longRetention).Claimed, "and stays absent")

		live := Token()
		e.mustClaim("pending", live, fp, longLease, longRetention)
		lapsed := Token()
		e.mustClaim("lapsed", lapsed, fp, shortLease, longRetention)
		e.mustHold("unleased", Token(), fp, longLease)
		reconciler, other := Token(), Token()
		e.mustHold("leased", Token(), fp, longLease)
		require.True(e.t, e.leaseHeld("leased", reconciler, longLease).Leased)
		e.mustHold("lapsed-lease", Token(), fp, longLease)
		require.True(e.t, e.leaseHeld("lapsed-lease", reconciler, shortLease).Leased)
		e.mustHold("re-leased", Token(), fp, longLease)
		require.True(e.t, e.leaseHeld("re-leased", reconciler, shortLease).Leased)
		e.mustHold("mismatch", Token(), fp, longLease)
		require.True(e.t, e.leaseHeld("mismatch", reconciler, longLease).Leased)
		e.elapse(shortLease)
		require.True(e.t, e.leaseHeld("re-leased", other, longLease).Leased, "another reconciler leases it once ours lapsed")

		for key, state := range map[string]backends.State{
			"pending": backends.StatePending, "lapsed": backends.StatePending,
			"unleased": backends.StateHeld, "re-leased": backends.StateHeld,
		} {
			res := e.resolveLeased(key, reconciler, nil, []byte("late"))
			require.False(e.t, res.Resolved, "%s: not a held record this token leased", key)
			require.Equal(e.t, state, res.Existing.State, key)
			require.Equal(e.t, fp, res.Existing.Fingerprint, key)
		}
		res = e.resolveLeased("leased", other, fp, []byte("late"))
		require.False(e.t, res.Resolved, "another token's Resolve")
		require.Equal(e.t, backends.StateHeld, res.Existing.State)
		res = e.resolveLeased("leased", "", fp, []byte("late"))
		require.False(e.t, res.Resolved, "an empty owner resolves nothing")
		res = e.resolveLeased("mismatch", reconciler, []byte("other"), []byte("late"))
		require.False(e.t, res.Resolved, "a mismatched fingerprint")
		require.Equal(e.t, backends.StateHeld, res.Existing.State)

		require.True(e.t, e.complete("pending", live, []byte("owner's"), longRetention), "the live owner keeps its claim")
		require.True(e.t, e.complete("lapsed", lapsed, []byte("owner's"), longRetention), "so does the lapsed one nobody took")
		e.requireCompleted(e.probe("pending"), fp, []byte("owner's"), "pending")

		for _, key := range []string{"leased", "lapsed-lease", "mismatch"} {
			given := fp
			if key == "mismatch" {
				given = nil
			}
			require.True(e.t, e.resolveLeased(key, reconciler, given, []byte("verdict")).Resolved, "%s: the lease's token resolves it (lapsed, as long as nobody took it)", key)
			require.True(e.t, e.resolveLeased(key, reconciler, given, []byte("verdict")).Resolved, "%s: a re-send reports Resolved", key)
			res := e.resolveLeased(key, other, given, []byte("verdict"))
			require.False(e.t, res.Resolved, "%s: the completed record stays", key)
			require.Equal(e.t, backends.StateCompleted, res.Existing.State, key)
			e.requireCompleted(e.probe(key), fp, []byte("verdict"), key)
		}
		require.True(e.t, e.resolveLeased("re-leased", other, fp, []byte("verdict")).Resolved, "the new lease's token resolves it")
	})

	run(t, newStore, "OnlyLeasedNeedsALease", func(e *env) {
		// The token of the claim that was held took no lease: it does not
		// satisfy the fence (issue 26), until it takes one with LeaseHeld.
		holder := Token()
		e.mustHold("k", holder, []byte("fp"), longLease)
		res := e.resolveLeased("k", holder, nil, []byte("verdict"))
		require.False(e.t, res.Resolved, "the holder's token without a lease resolves nothing")
		require.Equal(e.t, backends.StateHeld, res.Existing.State)
		require.Equal(e.t, []byte("fp"), res.Existing.Fingerprint)
		e.requireHeld(e.probe("k"), []byte("fp"), "the key stays held")
		require.True(e.t, e.leaseHeld("k", holder, longLease).Leased)
		require.True(e.t, e.resolveLeased("k", holder, nil, []byte("verdict")).Resolved, "leased, the same token resolves it")
		e.requireCompleted(e.probe("k"), []byte("fp"), []byte("verdict"), "resolved")
	})

	run(t, newStore, "OnlyLeasedRacesTakeover", func(e *env) {
		// A fenced Resolve whose lease lapsed, and a Claim that takes the
		// key over once its hold ended too, concurrently: one of them
		// wins, never both.
		const keys = 20
		type raced struct{ key, reconciler string }
		var rs []raced
		for range keys {
			r := raced{key: "race-" + Token()[:8], reconciler: Token()}
			e.mustHold(r.key, Token(), nil, shortLease)
			require.True(e.t, e.leaseHeld(r.key, r.reconciler, shortLease).Leased)
			rs = append(rs, r)
		}
		e.elapse(shortLease)
		for i, r := range rs {
			owner := Token()
			var (
				wg       sync.WaitGroup
				claim    backends.ClaimResult
				resolved backends.ResolveResult
				cErr     error
				rErr     error
			)
			doClaim := func() {
				defer wg.Done()
				claim, cErr = e.store.Claim(e.ctx, e.claimParams(r.key, owner, nil, longLease, longRetention))
			}
			doResolve := func() {
				defer wg.Done()
				resolved, rErr = e.store.Resolve(e.ctx, backends.ResolveParams{
					Scope: e.scope, Key: r.key, Owner: r.reconciler, Outcome: []byte("verdict"), Retention: longRetention, OnlyLeased: true,
				})
			}
			wg.Add(2)
			if i%2 == 0 {
				go doClaim()
				go doResolve()
			} else {
				go doResolve()
				go doClaim()
			}
			wg.Wait()
			require.NoError(e.t, cErr)
			require.NoError(e.t, rErr)
			require.NotEqual(e.t, claim.Claimed, resolved.Resolved, "round %d: exactly one of the takeover (%+v) and the resolve (%+v) wins", i, claim, resolved)
			if claim.Claimed {
				require.Equal(e.t, backends.StatePending, resolved.Existing.State, "round %d", i)
				require.True(e.t, e.complete(r.key, owner, []byte("owner's"), longRetention), "round %d: the takeover keeps its claim", i)
			} else {
				require.Equal(e.t, backends.StateCompleted, claim.Existing.State, "round %d", i)
			}
		}
	})
}
