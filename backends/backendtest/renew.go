package backendtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func exerciseRenew(t *testing.T, newStore NewStore) {
	run(t, newStore, "ExtendsLease", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, shortLease, longRetention)
		require.True(e.t, e.renew("k", owner, longLease))
		e.elapse(shortLease)
		r := e.probe("k")
		e.requirePending(r, nil, "a renewed lease is still live")
		require.Greater(e.t, r.Existing.LeaseRemaining, longLease-10*time.Second)
	})

	run(t, newStore, "WrongOwnerOrCompleted", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.False(e.t, e.renew("k", Token(), longLease), "foreign token")
		require.False(e.t, e.renew("absent", owner, longLease), "absent key")
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		require.False(e.t, e.renew("k", owner, longLease), "completed record")
	})

	run(t, newStore, "ExtendsLifePastRetention", func(e *env) {
		// Issue 13 (2), decision A: fn runs longer than the retention while
		// renewals succeed; a duplicate gets in-progress throughout. Each
		// round waits past the retention on the store's clock, then renews.
		// The lease is far longer than a round's wait: on a loaded machine
		// a wait of 300 ms took 800 ms, and a lease that lapses between
		// renewals is not what this case is about.
		const (
			retention = 50 * time.Millisecond
			lease     = 10 * time.Second
		)
		owner := Token()
		e.mustClaim("k", owner, []byte("fp"), lease, retention)
		for round := range 4 {
			e.elapse(2 * retention)
			e.requirePending(e.claim("k", Token(), []byte("fp"), longLease, longRetention), []byte("fp"),
				"round "+string(rune('0'+round))+": a renewed claim outlives its retention")
			require.True(e.t, e.renew("k", owner, lease), "round %d: the owner still holds its claim", round)
		}
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		e.requireCompleted(e.probe("k"), []byte("fp"), []byte("v"), "completed after a run longer than the retention")
	})

	run(t, newStore, "AfterLapsedLease", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, shortLease, longRetention)
		e.elapse(shortLease)
		require.True(e.t, e.renew("k", owner, longLease), "a lapsed lease nobody took over is renewed")
		e.requirePending(e.probe("k"), nil, "renewed")
	})

	run(t, newStore, "ReSentReportsApplied", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.renew("k", owner, longLease))
		require.True(e.t, e.renew("k", owner, longLease), "a re-sent Renew reports applied while the claim is held")
	})

	run(t, newStore, "TinyLeaseEnds", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, longLease, longRetention)
		require.True(e.t, e.renew("k", owner, time.Nanosecond))
		e.eventually(func() bool { return e.probe("k").TookOver }, "a renewal to 1ns ends the lease soon (never 0 or forever)")
	})
}
