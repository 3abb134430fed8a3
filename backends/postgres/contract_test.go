package postgres

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// The contract decisions A–D of the store contract, and the bounded waits
// of issue 13 item 8, checked against the real server.

const longAgo = 290 * 365 * 24 * time.Hour // what a math.MaxInt64 duration must at least mean

func getRecord(t *testing.T, s *Store, scope, key string) (backends.Record, time.Duration, bool) {
	t.Helper()
	rec, err := s.Get(context.Background(), scope, key)
	exp := rec.ExpiresIn
	found := rec.State != 0
	require.NoError(t, err)
	return rec, exp, found
}

// TestPendingOutlivesRetention is decision A: a pending record lives at
// least until its lease ends, whatever the retention, and each renewal
// extends its life to the new lease end.
func TestPendingOutlivesRetention(t *testing.T) {
	s := newStore(t, newPool(t, nil))
	ctx := context.Background()
	scope := backendtest.Scope(t)

	p := claimParams(scope, "short-retention")
	p.Lease, p.Retention = time.Minute, time.Millisecond
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	backendtest.Elapse(t, s, p.Retention) // past the retention, far from the lease end
	dup, err := s.Claim(ctx, claimParams(scope, "short-retention"))
	require.NoError(t, err)
	require.False(t, dup.Claimed, "a duplicate ran while the owner's lease was live")
	require.Equal(t, backends.StatePending, dup.Existing.State)
	_, expiresIn, found := getRecord(t, s, scope, "short-retention")
	require.True(t, found)
	require.Greater(t, expiresIn, 50*time.Second, "the record lives at least to its lease end")

	// Renewal: a short lease and a short retention, renewed to a long lease.
	p = claimParams(scope, "renewed")
	p.Lease, p.Retention = 300*time.Millisecond, time.Millisecond
	r, err = s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "renewed", Owner: p.Owner, Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
	backendtest.Elapse(t, s, p.Lease) // past the first lease and the retention
	dup, err = s.Claim(ctx, claimParams(scope, "renewed"))
	require.NoError(t, err)
	require.False(t, dup.Claimed, "a duplicate ran while the renewed lease was live")
	require.Greater(t, dup.Existing.LeaseRemaining, 50*time.Second)

	// A completed record lives Retention from its completion.
	ok, err = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "renewed", Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	_, expiresIn, found = getRecord(t, s, scope, "renewed")
	require.True(t, found)
	require.Greater(t, expiresIn, 59*time.Minute)
	require.LessOrEqual(t, expiresIn, time.Hour)
}

// TestExtremeDurations is decision B: math.MaxInt64 leases and
// retentions mean about 292 years, never a wrapped short value, and a
// sub-microsecond one is not rounded down to nothing.
func TestExtremeDurations(t *testing.T) {
	s := newStore(t, newPool(t, nil))
	ctx := context.Background()
	scope := backendtest.Scope(t)
	const forever = time.Duration(math.MaxInt64)

	p := claimParams(scope, "forever")
	p.Lease, p.Retention = forever, forever
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	dup, err := s.Claim(ctx, claimParams(scope, "forever"))
	require.NoError(t, err)
	require.False(t, dup.Claimed)
	require.Greater(t, dup.Existing.LeaseRemaining, longAgo, "the lease wrapped: %v", dup.Existing.LeaseRemaining)
	ok, err := s.Renew(ctx, backends.RenewParams{Scope: scope, Key: "forever", Owner: p.Owner, Lease: forever})
	require.NoError(t, err)
	require.True(t, ok)
	rec, expiresIn, found := getRecord(t, s, scope, "forever")
	require.True(t, found)
	require.Greater(t, rec.LeaseRemaining, longAgo)
	require.Greater(t, expiresIn, longAgo)
	ok, err = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "forever", Owner: p.Owner, Outcome: []byte("v"), Retention: forever})
	require.NoError(t, err)
	require.True(t, ok)
	_, expiresIn, found = getRecord(t, s, scope, "forever")
	require.True(t, found)
	require.Greater(t, expiresIn, longAgo)

	res, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "resolved-forever", Outcome: []byte("v"), Retention: forever, Owner: backendtest.Token()})
	require.NoError(t, err)
	require.True(t, res.Resolved)
	_, expiresIn, found = getRecord(t, s, scope, "resolved-forever")
	require.True(t, found)
	require.Greater(t, expiresIn, longAgo)
}
