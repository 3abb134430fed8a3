package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// The cases of backends.Admin. Each skips when the store does not
// implement it.

// admin returns s as a backends.Admin, or skips t.
func admin(t *testing.T, s backends.Store) backends.Admin {
	t.Helper()
	a, ok := s.(backends.Admin)
	if !ok {
		t.Skip("store does not implement backends.Admin")
	}
	return a
}

// get calls a.Get and fails t on an error.
func get(t *testing.T, a backends.Admin, scope, key string) (backends.Record, time.Duration, bool) {
	t.Helper()
	rec, expiresIn, found, err := a.Get(context.Background(), scope, key)
	require.NoError(t, err)
	return rec, expiresIn, found
}

// del calls a.Delete and fails t on an error.
func del(t *testing.T, a backends.Admin, scope, key string) bool {
	t.Helper()
	deleted, err := a.Delete(context.Background(), scope, key)
	require.NoError(t, err)
	return deleted
}

func testAdminGet(t *testing.T, s backends.Store) {
	a := admin(t, s)
	scope, owner := Scope(t), Token()

	_, _, found := get(t, a, scope, "absent")
	assert.False(t, found, "an absent key is not found")

	mustClaim(t, s, claim(scope, "k", owner, []byte("fp"), longLease, longRetention))
	rec, expiresIn, found := get(t, a, scope, "k")
	require.True(t, found, "pending")
	assert.Equal(t, backends.StatePending, rec.State)
	assert.Equal(t, []byte("fp"), rec.Fingerprint)
	assert.Nil(t, rec.Outcome)
	assert.Greater(t, rec.LeaseRemaining, longLease-10*time.Second)
	assert.LessOrEqual(t, rec.LeaseRemaining, longLease)
	assert.Greater(t, expiresIn, longRetention-10*time.Second)
	assert.LessOrEqual(t, expiresIn, longRetention)

	require.True(t, complete(t, s, scope, "k", owner, []byte("outcome"), 2*longRetention),
		"Get took the claim from nobody: its owner still completes")
	rec, expiresIn, found = get(t, a, scope, "k")
	require.True(t, found, "completed")
	assert.Equal(t, backends.StateCompleted, rec.State)
	assert.Equal(t, []byte("fp"), rec.Fingerprint)
	assert.Equal(t, []byte("outcome"), rec.Outcome)
	assert.Zero(t, rec.LeaseRemaining)
	assert.Greater(t, expiresIn, 2*longRetention-10*time.Second, "Complete restarts retention")
	assert.LessOrEqual(t, expiresIn, 2*longRetention)

	mustClaim(t, s, claim(scope, "nofp", Token(), nil, longLease, longRetention))
	rec, _, found = get(t, a, scope, "nofp")
	require.True(t, found)
	assert.Empty(t, rec.Fingerprint, "a claim without a fingerprint has none")
}

func testAdminGetLapsedAndExpired(t *testing.T, s backends.Store) {
	a := admin(t, s)
	scope, owner := Scope(t), Token()
	mustClaim(t, s, claim(scope, "lapsed", Token(), nil, shortLease, longRetention))
	mustClaim(t, s, claim(scope, "done", owner, nil, longLease, longRetention))
	require.True(t, complete(t, s, scope, "done", owner, []byte("v"), shortLease))
	mustClaim(t, s, claim(scope, "pending", Token(), nil, longLease, shortLease))
	time.Sleep(pastShort)

	rec, expiresIn, found := get(t, a, scope, "lapsed")
	require.True(t, found, "a pending record whose lease lapsed is still there")
	assert.Equal(t, backends.StatePending, rec.State)
	assert.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0))
	assert.Greater(t, expiresIn, time.Duration(0))
	for _, key := range []string{"done", "pending"} {
		_, _, found := get(t, a, scope, key)
		assert.False(t, found, "%s: an expired record is absent", key)
	}
}

func testAdminDeletePendingFencesOwner(t *testing.T, s backends.Store) {
	a := admin(t, s)
	ctx := context.Background()
	scope, stale, fresh := Scope(t), Token(), Token()
	mustClaim(t, s, claim(scope, "k", stale, []byte("a"), longLease, longRetention))
	require.True(t, del(t, a, scope, "k"))
	_, _, found := get(t, a, scope, "k")
	assert.False(t, found, "deleted")

	fenced := func(when string) {
		t.Helper()
		assert.False(t, complete(t, s, scope, "k", stale, []byte("stale"), longRetention), "%s: stale owner completes nothing", when)
		ok, err := s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "k", Owner: stale, Lease: longLease})
		require.NoError(t, err)
		assert.False(t, ok, "%s: stale owner renews nothing", when)
		ok, err = s.Release(ctx, backends.ReleaseParams{Scope: scope, Key: "k", Owner: stale})
		require.NoError(t, err)
		assert.False(t, ok, "%s: stale owner releases nothing", when)
	}
	fenced("after delete")
	_, _, found = get(t, a, scope, "k")
	assert.False(t, found, "the stale owner's writes recreated nothing")

	r, err := s.Claim(ctx, claim(scope, "k", fresh, []byte("b"), longLease, longRetention))
	require.NoError(t, err)
	assert.True(t, r.Claimed, "a deleted key is claimable at once, with any fingerprint")
	assert.False(t, r.TookOver)
	fenced("after a new claim")
	assert.True(t, complete(t, s, scope, "k", fresh, []byte("fresh"), longRetention))
	rec, _, found := get(t, a, scope, "k")
	require.True(t, found)
	assert.Equal(t, []byte("fresh"), rec.Outcome)
}

func testAdminDeleteCompleted(t *testing.T, s backends.Store) {
	a := admin(t, s)
	base := Scope(t)
	// Two pairs whose naive concatenation collides: deleting one must not
	// touch the other.
	pairs := [][2]string{{base + ":a", "b"}, {base, "a:b"}}
	for _, p := range pairs {
		owner := Token()
		mustClaim(t, s, claim(p[0], p[1], owner, []byte("a"), longLease, longRetention))
		require.True(t, complete(t, s, p[0], p[1], owner, []byte(p[0]), longRetention))
	}
	require.True(t, del(t, a, pairs[0][0], pairs[0][1]))
	rec, _, found := get(t, a, pairs[1][0], pairs[1][1])
	require.True(t, found, "the other pair is untouched")
	assert.Equal(t, []byte(pairs[1][0]), rec.Outcome)

	r, err := s.Claim(context.Background(), claim(pairs[0][0], pairs[0][1], Token(), []byte("b"), longLease, longRetention))
	require.NoError(t, err)
	assert.True(t, r.Claimed, "a deleted completed key is a new intent, whatever the fingerprint")
	assert.False(t, r.TookOver)
}

func testAdminDeleteAbsent(t *testing.T, s backends.Store) {
	a := admin(t, s)
	scope, owner := Scope(t), Token()
	assert.False(t, del(t, a, scope, "absent"), "nothing to delete")

	mustClaim(t, s, claim(scope, "expired", owner, nil, longLease, longRetention))
	require.True(t, complete(t, s, scope, "expired", owner, []byte("v"), shortLease))
	mustClaim(t, s, claim(scope, "twice", Token(), nil, longLease, longRetention))
	time.Sleep(pastShort)
	assert.False(t, del(t, a, scope, "expired"), "an expired record is absent")
	assert.True(t, del(t, a, scope, "twice"))
	assert.False(t, del(t, a, scope, "twice"), "a second delete finds nothing")
}

func testAdminDeleteWakesWatchers(t *testing.T, s backends.Store) {
	a := admin(t, s)
	w, ok := s.(backends.Watcher)
	if !ok {
		t.Skip("store does not implement backends.Watcher")
	}
	scope := Scope(t)
	mustClaim(t, s, claim(scope, "k", Token(), nil, longLease, longRetention))
	changed, stop, err := w.Watch(context.Background(), scope, "k")
	require.NoError(t, err)
	defer stop()
	go func() {
		_, err := a.Delete(context.Background(), scope, "k")
		assert.NoError(t, err)
	}()
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("a delete did not wake the watcher of a pending key")
	}
}
