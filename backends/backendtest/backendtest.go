// Package backendtest is the conformance suite every once backend passes.
//
// A backend's tests call Run with a constructor; its benchmarks call
// Benchmark. Every case uses a fresh random scope, so backends may share one
// table or keyspace between cases and cases run in parallel. Lease and
// retention cases use real, short durations (tens of milliseconds): the
// suite waits for the store's own clock instead of faking it, so it checks
// that the backend really computes time on the server.
package backendtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// Durations used by the suite. Short leases are long enough for a local
// round trip and short enough to keep the suite fast.
const (
	longLease     = time.Minute
	longRetention = time.Hour
	shortLease    = 150 * time.Millisecond
	pastShort     = 400 * time.Millisecond
)

// NewStore returns the store under test. It is called once per case; it may
// return the same shared store every time.
type NewStore func(t testing.TB) backends.Store

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(t *testing.T, s backends.Store)
	}{
		{"ClaimNew", testClaimNew},
		{"DuplicateInProgress", testDuplicateInProgress},
		{"Replay", testReplay},
		{"CompleteWrongOwner", testCompleteWrongOwner},
		{"CompleteIsIdempotent", testCompleteIsIdempotent},
		{"RenewExtendsLease", testRenewExtendsLease},
		{"RenewWrongOwnerOrCompleted", testRenewWrongOwnerOrCompleted},
		{"ReleaseThenReclaim", testReleaseThenReclaim},
		{"ReleaseWrongOwner", testReleaseWrongOwner},
		{"LeaseTakeover", testLeaseTakeover},
		{"TakeoverNeedsMatchingFingerprint", testTakeoverNeedsMatchingFingerprint},
		{"CompleteAfterLapsedLease", testCompleteAfterLapsedLease},
		{"CompletedNeverTakenOver", testCompletedNeverTakenOver},
		{"RetentionExpiry", testRetentionExpiry},
		{"ScopeIsolation", testScopeIsolation},
		{"ExactlyOneWinner", testExactlyOneWinner},
		{"CancelledContext", testCancelledContext},
		{"OddKeys", testOddKeys},
		{"Values", testValues},
		{"ResolveAbsent", testResolveAbsent},
		{"ResolvePending", testResolvePending},
		{"ResolveNeverOverwrites", testResolveNeverOverwrites},
		{"Watch", testWatch},
		{"AdminGet", testAdminGet},
		{"AdminGetLapsedAndExpired", testAdminGetLapsedAndExpired},
		{"AdminDeletePendingFencesOwner", testAdminDeletePendingFencesOwner},
		{"AdminDeleteCompleted", testAdminDeleteCompleted},
		{"AdminDeleteAbsent", testAdminDeleteAbsent},
		{"AdminDeleteWakesWatchers", testAdminDeleteWakesWatchers},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, newStore(t))
		})
	}
}

// Scope returns a fresh random scope name for one case.
func Scope(tb testing.TB) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "bt-" + hex.EncodeToString(b[:])
}

// Token returns a fresh random owner token.
func Token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func claim(scope, key, owner string, fp []byte, lease, retention time.Duration) backends.ClaimParams {
	return backends.ClaimParams{Scope: scope, Key: key, Fingerprint: fp, Owner: owner, Lease: lease, Retention: retention}
}

func mustClaim(t *testing.T, s backends.Store, p backends.ClaimParams) {
	t.Helper()
	r, err := s.Claim(context.Background(), p)
	require.NoError(t, err)
	require.True(t, r.Claimed, "claim of a fresh key must succeed")
}

func complete(t *testing.T, s backends.Store, scope, key, owner string, outcome []byte, retention time.Duration) bool {
	t.Helper()
	ok, err := s.Complete(context.Background(), backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: outcome, Retention: retention})
	require.NoError(t, err)
	return ok
}

func testClaimNew(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	r, err := s.Claim(context.Background(), claim(scope, "k", owner, []byte("fp"), longLease, longRetention))
	require.NoError(t, err)
	assert.True(t, r.Claimed)
	assert.False(t, r.TookOver)
	assert.Equal(t, backends.Record{}, r.Existing)
}

func testDuplicateInProgress(t *testing.T, s backends.Store) {
	scope := Scope(t)
	mustClaim(t, s, claim(scope, "k", Token(), []byte("fp1"), longLease, longRetention))
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), []byte("fp2"), longLease, longRetention))
	require.NoError(t, err)
	assert.False(t, r.Claimed)
	assert.Equal(t, backends.StatePending, r.Existing.State)
	assert.Equal(t, []byte("fp1"), r.Existing.Fingerprint, "the stored fingerprint, not the caller's")
	assert.Nil(t, r.Existing.Outcome)
	assert.Greater(t, r.Existing.LeaseRemaining, longLease-10*time.Second)
	assert.LessOrEqual(t, r.Existing.LeaseRemaining, longLease)
}

func testReplay(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, []byte("fp"), longLease, longRetention))
	require.True(t, complete(t, s, scope, "k", owner, []byte("outcome"), longRetention))
	for range 3 {
		r, err := s.Claim(context.Background(), claim(scope, "k", Token(), []byte("fp"), longLease, longRetention))
		require.NoError(t, err)
		assert.False(t, r.Claimed)
		assert.Equal(t, backends.StateCompleted, r.Existing.State)
		assert.Equal(t, []byte("outcome"), r.Existing.Outcome)
		assert.Equal(t, []byte("fp"), r.Existing.Fingerprint)
	}
}

func testCompleteWrongOwner(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, nil, longLease, longRetention))
	assert.False(t, complete(t, s, scope, "k", Token(), []byte("x"), longRetention), "a foreign token must not complete")
	assert.False(t, complete(t, s, scope, "absent", owner, []byte("x"), longRetention), "an absent key must not complete")
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), nil, longLease, longRetention))
	require.NoError(t, err)
	assert.Equal(t, backends.StatePending, r.Existing.State, "the record is still the owner's pending claim")
	assert.True(t, complete(t, s, scope, "k", owner, []byte("y"), longRetention))
	assert.False(t, complete(t, s, scope, "k", owner, []byte("z"), longRetention), "a completed record is never completed with another outcome")
	assert.False(t, complete(t, s, scope, "k", Token(), []byte("y"), longRetention), "nor by another owner")
	r, err = s.Claim(context.Background(), claim(scope, "k", Token(), nil, longLease, longRetention))
	require.NoError(t, err)
	assert.Equal(t, []byte("y"), r.Existing.Outcome)
}

func testCompleteIsIdempotent(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, nil, longLease, longRetention))
	require.True(t, complete(t, s, scope, "k", owner, []byte("v"), longRetention))
	assert.True(t, complete(t, s, scope, "k", owner, []byte("v"), longRetention),
		"a retried Complete whose first reply was lost still reports applied")
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), nil, longLease, longRetention))
	require.NoError(t, err)
	assert.Equal(t, backends.StateCompleted, r.Existing.State)
	assert.Equal(t, []byte("v"), r.Existing.Outcome)
}

func testRenewExtendsLease(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, nil, shortLease, longRetention))
	ok, err := s.Renew(context.Background(), backends.RenewParams{Scope: scope, Key: "k", Owner: owner, Lease: longLease})
	require.NoError(t, err)
	require.True(t, ok)
	time.Sleep(pastShort)
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), nil, longLease, longRetention))
	require.NoError(t, err)
	assert.False(t, r.Claimed, "a renewed lease must not be taken over")
	assert.Greater(t, r.Existing.LeaseRemaining, shortLease)
}

func testRenewWrongOwnerOrCompleted(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, nil, longLease, longRetention))
	ok, err := s.Renew(context.Background(), backends.RenewParams{Scope: scope, Key: "k", Owner: Token(), Lease: longLease})
	require.NoError(t, err)
	assert.False(t, ok, "foreign token")
	ok, err = s.Renew(context.Background(), backends.RenewParams{Scope: scope, Key: "absent", Owner: owner, Lease: longLease})
	require.NoError(t, err)
	assert.False(t, ok, "absent key")
	require.True(t, complete(t, s, scope, "k", owner, []byte("v"), longRetention))
	ok, err = s.Renew(context.Background(), backends.RenewParams{Scope: scope, Key: "k", Owner: owner, Lease: longLease})
	require.NoError(t, err)
	assert.False(t, ok, "completed record")
}

func testReleaseThenReclaim(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, []byte("a"), longLease, longRetention))
	ok, err := s.Release(context.Background(), backends.ReleaseParams{Scope: scope, Key: "k", Owner: owner})
	require.NoError(t, err)
	require.True(t, ok)
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), []byte("b"), longLease, longRetention))
	require.NoError(t, err)
	assert.True(t, r.Claimed, "a released key is claimable at once, with any fingerprint")
	assert.False(t, r.TookOver)
	ok, err = s.Release(context.Background(), backends.ReleaseParams{Scope: scope, Key: "k", Owner: owner})
	require.NoError(t, err)
	assert.False(t, ok, "the first owner's token no longer releases anything")
}

func testReleaseWrongOwner(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, nil, longLease, longRetention))
	ok, err := s.Release(context.Background(), backends.ReleaseParams{Scope: scope, Key: "k", Owner: Token()})
	require.NoError(t, err)
	assert.False(t, ok)
	require.True(t, complete(t, s, scope, "k", owner, []byte("v"), longRetention))
	ok, err = s.Release(context.Background(), backends.ReleaseParams{Scope: scope, Key: "k", Owner: owner})
	require.NoError(t, err)
	assert.False(t, ok, "a completed record is never released")
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), nil, longLease, longRetention))
	require.NoError(t, err)
	assert.Equal(t, backends.StateCompleted, r.Existing.State)
}

func testLeaseTakeover(t *testing.T, s backends.Store) {
	scope, stale, fresh := Scope(t), Token(), Token()
	mustClaim(t, s, claim(scope, "k", stale, []byte("fp"), shortLease, longRetention))
	r, err := s.Claim(context.Background(), claim(scope, "k", fresh, []byte("fp"), longLease, longRetention))
	require.NoError(t, err)
	require.False(t, r.Claimed, "a live lease is not taken over")
	time.Sleep(pastShort)
	r, err = s.Claim(context.Background(), claim(scope, "k", fresh, []byte("fp"), longLease, longRetention))
	require.NoError(t, err)
	require.True(t, r.Claimed)
	assert.True(t, r.TookOver)

	ctx := context.Background()
	ok, err := s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "k", Owner: stale, Lease: longLease})
	require.NoError(t, err)
	assert.False(t, ok, "stale owner renews nothing")
	ok, err = s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "k", Owner: stale})
	require.NoError(t, err)
	assert.False(t, ok, "stale owner releases nothing")
	assert.False(t, complete(t, s, scope, "k", stale, []byte("stale"), longRetention), "stale owner completes nothing")
	assert.True(t, complete(t, s, scope, "k", fresh, []byte("fresh"), longRetention))
	r, err = s.Claim(ctx, claim(scope, "k", Token(), []byte("fp"), longLease, longRetention))
	require.NoError(t, err)
	assert.Equal(t, []byte("fresh"), r.Existing.Outcome)
}

func testTakeoverNeedsMatchingFingerprint(t *testing.T, s backends.Store) {
	scope := Scope(t)
	mustClaim(t, s, claim(scope, "k", Token(), []byte("fp1"), shortLease, longRetention))
	mustClaim(t, s, claim(scope, "k2", Token(), []byte("fp1"), shortLease, longRetention))
	time.Sleep(pastShort)
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), []byte("fp2"), longLease, longRetention))
	require.NoError(t, err)
	assert.False(t, r.Claimed, "another payload never takes over a key")
	assert.Equal(t, backends.StatePending, r.Existing.State)
	assert.LessOrEqual(t, r.Existing.LeaseRemaining, time.Duration(0))
	r, err = s.Claim(context.Background(), claim(scope, "k2", Token(), nil, longLease, longRetention))
	require.NoError(t, err)
	assert.True(t, r.Claimed, "an empty fingerprint does not check")
	assert.True(t, r.TookOver)
}

func testCompleteAfterLapsedLease(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, nil, shortLease, longRetention))
	time.Sleep(pastShort)
	assert.True(t, complete(t, s, scope, "k", owner, []byte("late"), longRetention),
		"an owner whose lease lapsed but was not taken over still completes")
}

func testCompletedNeverTakenOver(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, nil, shortLease, longRetention))
	require.True(t, complete(t, s, scope, "k", owner, []byte("v"), longRetention))
	time.Sleep(pastShort)
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), nil, shortLease, longRetention))
	require.NoError(t, err)
	assert.False(t, r.Claimed)
	assert.Equal(t, []byte("v"), r.Existing.Outcome)
}

func testRetentionExpiry(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "done", owner, []byte("a"), longLease, longRetention))
	require.True(t, complete(t, s, scope, "done", owner, []byte("v"), shortLease))
	mustClaim(t, s, claim(scope, "pending", Token(), []byte("a"), longLease, shortLease))
	time.Sleep(pastShort)
	for _, key := range []string{"done", "pending"} {
		r, err := s.Claim(context.Background(), claim(scope, key, Token(), []byte("b"), longLease, longRetention))
		require.NoError(t, err)
		assert.True(t, r.Claimed, "%s: an expired record is absent, whatever its fingerprint", key)
		assert.False(t, r.TookOver, key)
	}
}

func testScopeIsolation(t *testing.T, s backends.Store) {
	base := Scope(t)
	pairs := [][2]string{
		{base + ":a:b", "c"}, {base + ":a", "b:c"}, {base + ":a", "b"},
		{base + "{a}", "b"}, {base + "{a", "}b"}, {base + "*", "*"}, {base + "a", "*"},
		{base + "/a", "b"}, {base + "/a/b", ""},
	}
	for i, p := range pairs {
		if p[1] == "" {
			continue
		}
		owner := Token()
		mustClaim(t, s, claim(p[0], p[1], owner, nil, longLease, longRetention))
		require.True(t, complete(t, s, p[0], p[1], owner, []byte{byte(i)}, longRetention))
	}
	for i, p := range pairs {
		if p[1] == "" {
			continue
		}
		r, err := s.Claim(context.Background(), claim(p[0], p[1], Token(), nil, longLease, longRetention))
		require.NoError(t, err)
		require.False(t, r.Claimed, "%q/%q", p[0], p[1])
		assert.Equal(t, []byte{byte(i)}, r.Existing.Outcome, "%q/%q must hold its own outcome", p[0], p[1])
	}
}

func testExactlyOneWinner(t *testing.T, s backends.Store) {
	scope := Scope(t)
	const n = 32
	var winners atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := s.Claim(context.Background(), claim(scope, "hot", Token(), []byte("fp"), longLease, longRetention))
			if assert.NoError(t, err) && r.Claimed {
				winners.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int32(1), winners.Load())
}

func testCancelledContext(t *testing.T, s backends.Store) {
	scope := Scope(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Claim(ctx, claim(scope, "k", Token(), nil, longLease, longRetention))
	require.Error(t, err)
	mustClaim(t, s, claim(scope, "k", Token(), nil, longLease, longRetention))
}

func testOddKeys(t *testing.T, s backends.Store) {
	scope := Scope(t)
	keys := []string{
		"k",
		strings.Repeat("x", backends.MaxKeyLen),
		strings.Repeat("é", backends.MaxKeyLen/2),
		"🙂 emoji",
		"with space",
		`quote'"\`,
		"{braces}",
		"%s %d",
		"' OR 1=1 --",
		"日本語のキー",
	}
	long := scope + strings.Repeat("s", backends.MaxScopeLen-len(scope))
	for i, key := range keys {
		for _, sc := range []string{scope, long} {
			owner := Token()
			mustClaim(t, s, claim(sc, key, owner, []byte{0, byte(i), 255}, longLease, longRetention))
			require.True(t, complete(t, s, sc, key, owner, []byte(key), longRetention))
			r, err := s.Claim(context.Background(), claim(sc, key, Token(), nil, longLease, longRetention))
			require.NoError(t, err)
			assert.Equal(t, []byte(key), r.Existing.Outcome, "key %q", key)
			assert.Equal(t, []byte{0, byte(i), 255}, r.Existing.Fingerprint)
		}
	}
}

func testValues(t *testing.T, s backends.Store) {
	scope := Scope(t)
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
		"maxFP":    []byte("v"),
		"jsonlike": []byte(`{"a":1,"b":[true,null]}`),
	}
	fp := bytes.Repeat([]byte{0xAB}, backends.MaxFingerprintLen)
	for name, v := range values {
		owner := Token()
		mustClaim(t, s, claim(scope, name, owner, fp, longLease, longRetention))
		require.True(t, complete(t, s, scope, name, owner, v, longRetention))
		r, err := s.Claim(context.Background(), claim(scope, name, Token(), fp, longLease, longRetention))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(v, r.Existing.Outcome), "%s: value changed in the store", name)
		assert.Equal(t, fp, r.Existing.Fingerprint)
	}
}

func resolve(t *testing.T, s backends.Store, scope, key string, fp, outcome []byte) backends.ResolveResult {
	t.Helper()
	r, err := s.Resolve(context.Background(), backends.ResolveParams{Scope: scope, Key: key, Fingerprint: fp, Outcome: outcome, Retention: longRetention})
	require.NoError(t, err)
	return r
}

func testResolveAbsent(t *testing.T, s backends.Store) {
	scope := Scope(t)
	require.True(t, resolve(t, s, scope, "k", []byte("fp"), []byte("reconciled")).Resolved)
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), []byte("fp"), longLease, longRetention))
	require.NoError(t, err)
	assert.Equal(t, backends.StateCompleted, r.Existing.State)
	assert.Equal(t, []byte("reconciled"), r.Existing.Outcome)
	assert.Equal(t, []byte("fp"), r.Existing.Fingerprint)
}

func testResolvePending(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, []byte("fp"), longLease, longRetention))
	res := resolve(t, s, scope, "k", []byte("other"), []byte("x"))
	assert.False(t, res.Resolved, "a mismatched fingerprint resolves nothing")
	assert.Equal(t, backends.StatePending, res.Existing.State)
	require.True(t, resolve(t, s, scope, "k", []byte("fp"), []byte("reconciled")).Resolved)
	assert.False(t, complete(t, s, scope, "k", owner, []byte("late"), longRetention), "the held owner no longer completes")
	r, err := s.Claim(context.Background(), claim(scope, "k", Token(), nil, longLease, longRetention))
	require.NoError(t, err)
	assert.Equal(t, []byte("reconciled"), r.Existing.Outcome)
	assert.Equal(t, []byte("fp"), r.Existing.Fingerprint)
}

func testResolveNeverOverwrites(t *testing.T, s backends.Store) {
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, nil, longLease, longRetention))
	require.True(t, complete(t, s, scope, "k", owner, []byte("first"), longRetention))
	res := resolve(t, s, scope, "k", nil, []byte("second"))
	assert.False(t, res.Resolved)
	assert.Equal(t, backends.StateCompleted, res.Existing.State)
	assert.Equal(t, []byte("first"), res.Existing.Outcome)
}

func testWatch(t *testing.T, s backends.Store) {
	w, ok := s.(backends.Watcher)
	if !ok {
		t.Skip("store does not implement backends.Watcher; the core polls")
	}
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "k", owner, nil, longLease, longRetention))
	changed, stop, err := w.Watch(context.Background(), scope, "k")
	require.NoError(t, err)
	defer stop()
	go func() {
		_, err := s.Complete(context.Background(), backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: longRetention})
		assert.NoError(t, err)
	}()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("completion did not wake the watcher")
	}
}
