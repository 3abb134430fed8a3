package backendtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// How the suite waits for the store's clock: it polls every pollEvery and
// gives up after waitAtMost (a backend whose clock never advances fails).
const (
	pollEvery  = 2 * time.Millisecond
	waitAtMost = 20 * time.Second
)

// env is one behaviour's view of the store under test: a fresh scope and
// helpers that fail the test on an error, so a case reads as the contract.
type env struct {
	t     *testing.T
	ctx   context.Context
	store backends.Store
	scope string
}

// setup returns a fresh env for one behaviour.
func setup(t *testing.T, newStore NewStore) *env {
	t.Helper()
	return &env{t: t, ctx: t.Context(), store: newStore(t), scope: Scope(t)}
}

// run declares a parallel behaviour with its own env.
func run(t *testing.T, newStore NewStore, name string, fn func(e *env)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		fn(setup(t, newStore))
	})
}

func (e *env) claimParams(key, owner string, fp []byte, lease, retention time.Duration) backends.ClaimParams {
	return backends.ClaimParams{Scope: e.scope, Key: key, Fingerprint: fp, Owner: owner, Lease: lease, Retention: retention}
}

func (e *env) claim(key, owner string, fp []byte, lease, retention time.Duration) backends.ClaimResult {
	e.t.Helper()
	r, err := e.store.Claim(e.ctx, e.claimParams(key, owner, fp, lease, retention))
	require.NoError(e.t, err)
	return r
}

func (e *env) mustClaim(key, owner string, fp []byte, lease, retention time.Duration) {
	e.t.Helper()
	r := e.claim(key, owner, fp, lease, retention)
	require.True(e.t, r.Claimed, "claim of a fresh key must succeed: %+v", r)
	require.False(e.t, r.TookOver, "a fresh key has nothing to take over")
}

// probe claims key with a fresh owner and no fingerprint and returns the
// result: the record when it blocks a claim, or a new claim.
func (e *env) probe(key string) backends.ClaimResult {
	e.t.Helper()
	return e.claim(key, Token(), nil, longLease, longRetention)
}

func (e *env) complete(key, owner string, outcome []byte, retention time.Duration) bool {
	e.t.Helper()
	ok, err := e.store.Complete(e.ctx, backends.CompleteParams{Scope: e.scope, Key: key, Owner: owner, Outcome: outcome, Retention: retention})
	require.NoError(e.t, err)
	return ok
}

func (e *env) renew(key, owner string, lease time.Duration) bool {
	e.t.Helper()
	ok, err := e.store.Renew(e.ctx, backends.RenewParams{Scope: e.scope, Key: key, Owner: owner, Lease: lease})
	require.NoError(e.t, err)
	return ok
}

func (e *env) release(key, owner string) bool {
	e.t.Helper()
	ok, err := e.store.Release(e.ctx, backends.ReleaseParams{Scope: e.scope, Key: key, Owner: owner})
	require.NoError(e.t, err)
	return ok
}

// resolve calls Resolve with a fresh owner and longRetention.
func (e *env) resolve(key string, fp, outcome []byte) backends.ResolveResult {
	e.t.Helper()
	return e.resolveAs(key, Token(), fp, outcome)
}

func (e *env) resolveAs(key, owner string, fp, outcome []byte) backends.ResolveResult {
	e.t.Helper()
	r, err := e.store.Resolve(e.ctx, backends.ResolveParams{Scope: e.scope, Key: key, Fingerprint: fp, Owner: owner, Outcome: outcome, Retention: longRetention})
	require.NoError(e.t, err)
	return r
}

// resolveLeased is resolveAs with OnlyLeased.
func (e *env) resolveLeased(key, owner string, fp, outcome []byte) backends.ResolveResult {
	e.t.Helper()
	r, err := e.store.Resolve(e.ctx, backends.ResolveParams{
		Scope: e.scope, Key: key, Fingerprint: fp, Owner: owner, Outcome: outcome, Retention: longRetention, OnlyLeased: true,
	})
	require.NoError(e.t, err)
	return r
}

// eventually polls cond until it holds, failing the test after waitAtMost.
// cond may use require: it runs on the test's goroutine.
func (e *env) eventually(cond func() bool, msg string) {
	e.t.Helper()
	deadline := time.Now().Add(waitAtMost)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(e.t, "condition never held on the store's clock", msg)
		}
		select {
		case <-e.ctx.Done():
			require.FailNow(e.t, "test context ended", msg)
		case <-time.After(pollEvery):
		}
	}
}

// clockSlack covers the resolution of a store's clock: Redis, for one,
// counts whole milliseconds and expires a key a millisecond after the
// instant its script's TIME reads as its end.
const clockSlack = 5 * time.Millisecond

// elapse is Elapse on the env's store.
func (e *env) elapse(d time.Duration) {
	e.t.Helper()
	Elapse(e.t, e.store, d)
}

// requirePending fails unless r reports a pending record with fingerprint
// fp, left unclaimed.
func (e *env) requirePending(r backends.ClaimResult, fp []byte, msg string) {
	e.t.Helper()
	require.False(e.t, r.Claimed, "%s: the key must not be claimable", msg)
	require.Equal(e.t, backends.StatePending, r.Existing.State, msg)
	require.Equal(e.t, fp, r.Existing.Fingerprint, msg)
	require.Nil(e.t, r.Existing.Outcome, msg)
}

// requireCompleted fails unless r reports a completed record holding
// outcome and fingerprint fp.
func (e *env) requireCompleted(r backends.ClaimResult, fp, outcome []byte, msg string) {
	e.t.Helper()
	require.False(e.t, r.Claimed, "%s: a completed key is never claimed", msg)
	require.Equal(e.t, backends.StateCompleted, r.Existing.State, msg)
	require.Equal(e.t, outcome, r.Existing.Outcome, msg)
	require.Equal(e.t, fp, r.Existing.Fingerprint, msg)
	require.Zero(e.t, r.Existing.LeaseRemaining, msg)
}
