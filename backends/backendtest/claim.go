package backendtest

import (
	"bytes"
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

func exerciseClaim(t *testing.T, newStore NewStore) {
	run(t, newStore, "NewKey", func(e *env) {
		r := e.claim("k", Token(), []byte("fp"), longLease, longRetention)
		require.True(e.t, r.Claimed)
		require.False(e.t, r.TookOver)
		require.Equal(e.t, backends.Record{}, r.Existing)
	})

	run(t, newStore, "DuplicateInProgress", func(e *env) {
		e.mustClaim("k", Token(), []byte("fp1"), longLease, longRetention)
		r := e.claim("k", Token(), []byte("fp2"), longLease, longRetention)
		e.requirePending(r, []byte("fp1"), "the stored fingerprint, not the caller's")
		require.Greater(e.t, r.Existing.LeaseRemaining, longLease-10*time.Second)
		require.LessOrEqual(e.t, r.Existing.LeaseRemaining, longLease)
	})

	run(t, newStore, "ReSentBySameOwner", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, []byte("fp"), longLease, longRetention)
		r := e.claim("k", owner, []byte("fp"), longLease, longRetention)
		require.True(e.t, r.Claimed, "a driver's re-send of an applied Claim reports Claimed, not a duplicate")
		require.False(e.t, r.TookOver)
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention), "the owner still holds its claim")
	})

	run(t, newStore, "Replay", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, []byte("fp"), longLease, longRetention)
		require.True(e.t, e.complete("k", owner, []byte("outcome"), longRetention))
		for range 3 {
			e.requireCompleted(e.claim("k", Token(), []byte("fp"), longLease, longRetention),
				[]byte("fp"), []byte("outcome"), "replay")
		}
	})

	run(t, newStore, "AgeOnAnswer", func(e *env) {
		// backends.Record: a store that implements Lister records Age, on
		// every Record it returns, a Claim's answer included. Each case
		// reads the age twice, elapse(shortLease) apart on the store's
		// clock, so the second is at least shortLease more than the first:
		// no bound depends on how long the test took.
		e.lister()
		run(e.t, newStore, "Pending", func(e *env) {
			e.mustClaim("k", Token(), []byte("fp"), longLease, longRetention)
			first := e.claim("k", Token(), []byte("fp"), longLease, longRetention)
			e.requirePending(first, []byte("fp"), "a live claim")
			require.GreaterOrEqual(e.t, first.Existing.Age, time.Duration(0))
			e.elapse(shortLease)
			r := e.claim("k", Token(), []byte("other"), longLease, longRetention)
			e.requirePending(r, []byte("fp"), "a live claim, later")
			require.GreaterOrEqual(e.t, r.Existing.Age, first.Existing.Age+shortLease, "the age grows with the store's clock")
			require.LessOrEqual(e.t, r.Existing.Age, longLease, "a live claim is younger than its lease")
		})
		run(e.t, newStore, "CountsFromTheTakeover", func(e *env) {
			e.mustClaim("old", Token(), nil, longLease, longRetention)
			e.mustClaim("k", Token(), nil, shortLease, longRetention)
			e.elapse(shortLease)
			r := e.claim("k", Token(), nil, longLease, longRetention)
			require.True(e.t, r.TookOver)
			// k's age is read first: old was claimed at least shortLease
			// before k was taken over, and is read later.
			k, old := e.probe("k"), e.probe("old")
			e.requirePending(k, nil, "taken over")
			e.requirePending(old, nil, "never taken over")
			require.GreaterOrEqual(e.t, old.Existing.Age, k.Existing.Age+shortLease, "a takeover restarts the age")
		})
		run(e.t, newStore, "Held", func(e *env) {
			e.mustHold("k", Token(), []byte("fp"), longLease)
			first := e.claim("k", Token(), []byte("fp"), longLease, longRetention)
			e.requireHeld(first, []byte("fp"), "a live hold")
			e.elapse(shortLease)
			r := e.claim("k", Token(), []byte("fp"), longLease, longRetention)
			e.requireHeld(r, []byte("fp"), "a live hold, later")
			require.GreaterOrEqual(e.t, r.Existing.Age, first.Existing.Age+shortLease, "the age grows with the store's clock")
			require.LessOrEqual(e.t, r.Existing.Age, longLease, "a live hold is younger than its hold")
		})
	})

	run(t, newStore, "TakeoverAfterLeaseLapsed", func(e *env) {
		stale, fresh := Token(), Token()
		e.mustClaim("k", stale, []byte("fp"), shortLease, longRetention)
		require.False(e.t, e.claim("k", fresh, []byte("fp"), longLease, longRetention).Claimed, "a live lease is not taken over")
		e.elapse(shortLease)
		r := e.claim("k", fresh, []byte("fp"), longLease, longRetention)
		require.True(e.t, r.Claimed)
		require.True(e.t, r.TookOver)

		require.False(e.t, e.renew("k", stale, longLease), "stale owner renews nothing")
		require.False(e.t, e.release("k", stale), "stale owner releases nothing")
		require.False(e.t, e.complete("k", stale, []byte("stale"), longRetention), "stale owner completes nothing")
		require.True(e.t, e.complete("k", fresh, []byte("fresh"), longRetention))
		e.requireCompleted(e.claim("k", Token(), []byte("fp"), longLease, longRetention), []byte("fp"), []byte("fresh"), "the new owner's outcome")
	})

	run(t, newStore, "TakeoverNeedsMatchingFingerprint", func(e *env) {
		e.mustClaim("k", Token(), []byte("fp1"), shortLease, longRetention)
		e.mustClaim("k2", Token(), []byte("fp1"), shortLease, longRetention)
		e.elapse(shortLease)
		r := e.claim("k", Token(), []byte("fp2"), longLease, longRetention)
		e.requirePending(r, []byte("fp1"), "another payload never takes over a key")
		require.LessOrEqual(e.t, r.Existing.LeaseRemaining, time.Duration(0))
		r = e.claim("k2", Token(), nil, longLease, longRetention)
		require.True(e.t, r.Claimed, "an empty fingerprint does not check")
		require.True(e.t, r.TookOver)
	})

	run(t, newStore, "TakeoverKeepsFingerprint", func(e *env) {
		// Issue 13 (4): a takeover without a fingerprint must not unbind
		// the key from the request it was first claimed with.
		e.mustClaim("k", Token(), []byte("original"), shortLease, longRetention)
		e.elapse(shortLease)
		owner := Token()
		r := e.claim("k", owner, nil, longLease, longRetention)
		require.True(e.t, r.Claimed)
		require.True(e.t, r.TookOver)
		e.requirePending(e.probe("k"), []byte("original"), "the pending record keeps its fingerprint")
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		e.requireCompleted(e.probe("k"), []byte("original"), []byte("v"), "the completed record keeps it too")
	})

	run(t, newStore, "TakeoverBindsFingerprint", func(e *env) {
		// An empty stored fingerprint matches any (symmetric rule), and
		// the first non-empty one binds the key.
		e.mustClaim("k", Token(), nil, shortLease, longRetention)
		e.elapse(shortLease)
		r := e.claim("k", Token(), []byte("bound"), shortLease, longRetention)
		require.True(e.t, r.Claimed, "a record stored without a fingerprint is taken over by any")
		require.True(e.t, r.TookOver)
		e.elapse(shortLease)
		r = e.claim("k", Token(), []byte("other"), longLease, longRetention)
		e.requirePending(r, []byte("bound"), "the takeover bound the key")
	})

	run(t, newStore, "CompletedNeverTakenOver", func(e *env) {
		owner := Token()
		e.mustClaim("k", owner, nil, shortLease, longRetention)
		require.True(e.t, e.complete("k", owner, []byte("v"), longRetention))
		e.elapse(shortLease)
		e.requireCompleted(e.claim("k", Token(), nil, shortLease, longRetention), nil, []byte("v"), "past the old lease")
	})

	run(t, newStore, "RetentionExpiry", func(e *env) {
		owner := Token()
		e.mustClaim("done", owner, []byte("a"), longLease, longRetention)
		require.True(e.t, e.complete("done", owner, []byte("v"), shortLease))
		e.mustClaim("pending", Token(), []byte("a"), shortLease, shortLease)
		e.elapse(shortLease)
		for _, key := range []string{"done", "pending"} {
			r := e.claim(key, Token(), []byte("b"), longLease, longRetention)
			require.True(e.t, r.Claimed, "%s: an expired record is absent, whatever its fingerprint", key)
			require.False(e.t, r.TookOver, key)
		}
	})

	run(t, newStore, "PendingOutlivesShortRetention", func(e *env) {
		// Issue 13 (2), decision A: retention shorter than the lease does
		// not let a duplicate in while the lease is live.
		e.mustClaim("k", Token(), []byte("fp"), longLease, time.Millisecond)
		e.mustClaim("ns", Token(), []byte("fp"), longLease, time.Nanosecond)
		e.elapse(shortLease)
		for _, key := range []string{"k", "ns"} {
			r := e.claim(key, Token(), []byte("fp"), longLease, longRetention)
			e.requirePending(r, []byte("fp"), key+": a live lease outlives the retention")
			require.Greater(e.t, r.Existing.LeaseRemaining, longLease-10*time.Second, key)
		}
	})

	run(t, newStore, "PendingLivesToLeaseEndThenTakenOver", func(e *env) {
		// Once the lease outlived the retention and ends, the record is
		// either expired or a lapsed claim: a new claim succeeds.
		e.mustClaim("k", Token(), []byte("fp"), shortLease, time.Millisecond)
		e.elapse(shortLease)
		e.eventually(func() bool { return e.claim("k", Token(), []byte("fp"), longLease, longRetention).Claimed },
			"a record whose lease and retention ended is claimable")
	})

	run(t, newStore, "ExtremeLeases", func(e *env) {
		// Issue 13 (3), decision B: every positive lease means that long.
		huge := []time.Duration{math64, math64 - 1, 1 << 62, 200 * 365 * 24 * time.Hour, (1 << 53) * time.Microsecond}
		for i, d := range huge {
			key := "huge" + string(rune('a'+i))
			owner := Token()
			e.mustClaim(key, owner, nil, d, longRetention)
			e.mustClaim(key+"-renewed", owner, nil, longLease, time.Millisecond) // the renewal, not this lease, must make it huge; a short one could lapse first on a loaded machine
			require.True(e.t, e.renew(key+"-renewed", owner, d))
		}
		tiny := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Millisecond + time.Nanosecond}
		for i, d := range tiny {
			e.mustClaim("tiny"+string(rune('a'+i)), Token(), nil, d, longRetention)
		}
		e.elapse(shortLease)
		for i, d := range huge {
			key := "huge" + string(rune('a'+i))
			for _, k := range []string{key, key + "-renewed"} {
				r := e.probe(k)
				e.requirePending(r, nil, k+" ("+d.String()+"): a huge lease is live after a while")
				require.Greater(e.t, r.Existing.LeaseRemaining, 100*365*24*time.Hour, "%s: %v must not wrap into a short lease", k, d)
			}
		}
		for i, d := range tiny {
			key := "tiny" + string(rune('a'+i))
			r := e.probe(key)
			require.True(e.t, r.Claimed, "%s: a lease of %v has ended (it never means 0 or forever)", key, d)
			require.True(e.t, r.TookOver, "%s: the record is still there (long retention): taken over", key)
		}
	})

	run(t, newStore, "ExtremeRetentions", func(e *env) {
		huge := []time.Duration{math64, math64 - 1, 1 << 62, 200 * 365 * 24 * time.Hour}
		for i, d := range huge {
			key := "huge" + string(rune('a'+i))
			owner := Token()
			e.mustClaim(key, owner, []byte("fp"), time.Millisecond, d)
			e.mustClaim(key+"-done", owner, []byte("fp"), longLease, d)
			require.True(e.t, e.complete(key+"-done", owner, []byte("v"), d))
		}
		tiny := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond}
		for i, d := range tiny {
			owner := Token()
			e.mustClaim("tiny"+string(rune('a'+i)), owner, nil, longLease, longRetention)
			require.True(e.t, e.complete("tiny"+string(rune('a'+i)), owner, []byte("v"), d))
		}
		e.elapse(shortLease)
		for i, d := range huge {
			key := "huge" + string(rune('a'+i))
			e.requireCompleted(e.probe(key+"-done"), []byte("fp"), []byte("v"), key+" ("+d.String()+"): a huge retention keeps the outcome")
			r := e.claim(key, Token(), []byte("fp"), longLease, longRetention)
			require.True(e.t, r.Claimed, "%s: lapsed lease", key)
			require.True(e.t, r.TookOver, "%s (%v): a huge retention keeps the lapsed claim's record, taken over", key, d)
		}
		for i, d := range tiny {
			key := "tiny" + string(rune('a'+i))
			r := e.probe(key)
			require.True(e.t, r.Claimed, "%s: a retention of %v has ended", key, d)
			require.False(e.t, r.TookOver, key)
		}
	})

	run(t, newStore, "NonPositiveDurationsEndAtOnce", func(e *env) {
		// The core rejects them; a backend given one treats it as its
		// shortest duration, never as "forever".
		for i, d := range []time.Duration{0, -1, -time.Hour, math.MinInt64} {
			key := "lease" + string(rune('a'+i))
			e.mustClaim(key, Token(), nil, d, longRetention)
			owner := Token()
			e.mustClaim("retention"+string(rune('a'+i)), owner, nil, longLease, longRetention)
			require.True(e.t, e.complete("retention"+string(rune('a'+i)), owner, []byte("v"), d))
		}
		for i, d := range []time.Duration{0, -1, -time.Hour, math.MinInt64} {
			e.eventually(func() bool { return e.probe("lease" + string(rune('a'+i))).TookOver },
				"a lease of "+d.String()+" ends at once")
			e.eventually(func() bool { return e.probe("retention" + string(rune('a'+i))).Claimed },
				"a retention of "+d.String()+" ends at once")
		}
	})

	run(t, newStore, "ScopeIsolation", func(e *env) {
		base := e.scope
		pairs := [][2]string{
			{base + ":a:b", "c"}, {base + ":a", "b:c"}, {base + ":a", "b"},
			{base + "{a}", "b"}, {base + "{a", "}b"}, {base + "*", "*"}, {base + "a", "*"},
			{base + "/a", "b"},
		}
		for i, p := range pairs {
			e.scope = p[0]
			owner := Token()
			e.mustClaim(p[1], owner, nil, longLease, longRetention)
			require.True(e.t, e.complete(p[1], owner, []byte{byte(i)}, longRetention))
		}
		for i, p := range pairs {
			e.scope = p[0]
			e.requireCompleted(e.probe(p[1]), nil, []byte{byte(i)}, p[0]+"/"+p[1]+" must hold its own outcome")
		}
	})

	run(t, newStore, "ExactlyOneWinner", func(e *env) {
		const n = 32
		var winners, failures atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range n {
			wg.Go(func() {
				<-start
				r, err := e.store.Claim(e.ctx, e.claimParams("hot", Token(), []byte("fp"), longLease, longRetention))
				switch {
				case err != nil:
					failures.Add(1)
				case r.Claimed:
					winners.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		require.Zero(e.t, failures.Load(), "no claim fails")
		require.Equal(e.t, int32(1), winners.Load())
	})

	run(t, newStore, "CancelledContext", func(e *env) {
		ctx, cancel := context.WithCancel(e.ctx)
		cancel()
		_, err := e.store.Claim(ctx, e.claimParams("k", Token(), nil, longLease, longRetention))
		require.Error(e.t, err)
		e.mustClaim("k", Token(), nil, longLease, longRetention)
	})

	run(t, newStore, "OddKeys", func(e *env) {
		keys := []string{
			"k",
			strings.Repeat("x", backends.MaxKeyLen),
			strings.Repeat("é", backends.MaxKeyLen/2),
			"🙂 emoji", "with space", `quote'"\`, "{braces}", "%s %d", "' OR 1=1 --", "日本語のキー",
		}
		scope := e.scope
		long := scope + strings.Repeat("s", backends.MaxScopeLen-len(scope))
		for i, key := range keys {
			for _, sc := range []string{scope, long} {
				e.scope = sc
				owner, fp := Token(), []byte{0, byte(i), 255}
				e.mustClaim(key, owner, fp, longLease, longRetention)
				require.True(e.t, e.complete(key, owner, []byte(key), longRetention))
				e.requireCompleted(e.probe(key), fp, []byte(key), "key "+key)
			}
		}
	})

	run(t, newStore, "Values", func(e *env) {
		allBytes := make([]byte, 256)
		for i := range allBytes {
			allBytes[i] = byte(i)
		}
		values := map[string][]byte{
			"single":   {0},
			"binary":   allBytes,
			"large":    bytes.Repeat([]byte("0123456789abcdef"), 64<<10), // 1 MiB
			"utf8":     []byte("złoty ₿ 🙂"),
			"nulls":    make([]byte, 1000),
			"jsonlike": []byte(`{"a":1,"b":[true,null]}`),
		}
		fp := bytes.Repeat([]byte{0xAB}, backends.MaxFingerprintLen)
		for name, v := range values {
			owner := Token()
			e.mustClaim(name, owner, fp, longLease, longRetention)
			require.True(e.t, e.complete(name, owner, v, longRetention))
			r := e.claim(name, Token(), fp, longLease, longRetention)
			require.True(e.t, bytes.Equal(v, r.Existing.Outcome), "%s: value changed in the store", name)
			require.Equal(e.t, fp, r.Existing.Fingerprint)
		}
	})
}

// math64 is the longest time.Duration.
const math64 = time.Duration(1<<63 - 1)
