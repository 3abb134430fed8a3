package backendtest

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// The ownership rule of backends.Record: every byte slice in a record a
// store returns belongs to the caller, who may modify it, and the store
// never keeps a slice of the parameters it was given. Each case reads a
// record through one method, overwrites every byte the caller was handed
// (up to the slices' capacity, so an append is covered too), and checks
// that a fresh read, through the same method and through Claim, returns
// the bytes the record holds.

var (
	ownedFingerprint = []byte("fp-0123456789abcdef0123456789")
	ownedOutcome     = []byte(`{"order_id":"9b1e4d3a","status":"paid"}`)
)

// scribble overwrites every byte of b up to its capacity, as a caller that
// modifies or appends to a slice of its own may.
func scribble(b []byte) {
	b = b[:cap(b)]
	for i := range b {
		b[i] ^= 0xff
	}
}

// flipped returns b with every byte complemented, as scribble leaves it.
func flipped(b []byte) []byte {
	out := bytes.Clone(b)
	scribble(out)
	return out
}

// overwrite fails unless rec holds fingerprint fp and outcome, then
// scribbles over both, checking that neither slice reaches into the other.
func (e *env) overwrite(rec backends.Record, fp, outcome []byte, msg string) {
	e.t.Helper()
	require.Equal(e.t, fp, rec.Fingerprint, "%s: fingerprint", msg)
	require.Equal(e.t, outcome, rec.Outcome, "%s: outcome", msg)
	scribble(rec.Fingerprint)
	require.Equal(e.t, outcome, rec.Outcome, "%s: overwriting the fingerprint (to its capacity) changed the outcome", msg)
	scribble(rec.Outcome)
	require.Equal(e.t, flipped(fp), rec.Fingerprint, "%s: overwriting the outcome (to its capacity) changed the fingerprint", msg)
}

// requireOwned reads a record with read, overwrites what it returned, and
// checks that a second read, and a Claim of key, return fp and outcome.
func (e *env) requireOwned(key string, read func() backends.Record, fp, outcome []byte, msg string) {
	e.t.Helper()
	e.overwrite(read(), fp, outcome, msg)
	e.overwrite(read(), fp, outcome, msg+", read again after the caller overwrote the first answer")
	rec := e.probe(key).Existing
	require.Equal(e.t, fp, rec.Fingerprint, "%s: a Claim after the caller overwrote its answers", msg)
	require.Equal(e.t, outcome, rec.Outcome, "%s: a Claim after the caller overwrote its answers", msg)
}

// ownedCompleted stores a completed record under key with the suite's
// fingerprint and outcome, from buffers of the test's own.
func (e *env) ownedCompleted(key string) {
	e.t.Helper()
	owner := Token()
	e.mustClaim(key, owner, bytes.Clone(ownedFingerprint), longLease, longRetention)
	require.True(e.t, e.complete(key, owner, bytes.Clone(ownedOutcome), longRetention))
}

func exerciseOwnership(t *testing.T, newStore NewStore) {
	fp, outcome := ownedFingerprint, ownedOutcome

	run(t, newStore, "ClaimCompleted", func(e *env) {
		e.ownedCompleted("k")
		e.requireOwned("k", func() backends.Record {
			r := e.claim("k", Token(), bytes.Clone(fp), longLease, longRetention)
			require.Equal(e.t, backends.StateCompleted, r.Existing.State)
			return r.Existing
		}, fp, outcome, "Claim of a completed record")
	})

	run(t, newStore, "ClaimPending", func(e *env) {
		e.mustClaim("k", Token(), bytes.Clone(fp), longLease, longRetention)
		e.requireOwned("k", func() backends.Record {
			r := e.claim("k", Token(), nil, longLease, longRetention)
			require.Equal(e.t, backends.StatePending, r.Existing.State)
			return r.Existing
		}, fp, nil, "Claim of a pending record")
	})

	run(t, newStore, "ClaimHeld", func(e *env) {
		e.mustHold("k", Token(), bytes.Clone(fp), longLease)
		e.requireOwned("k", func() backends.Record {
			r := e.claim("k", Token(), nil, longLease, longRetention)
			require.Equal(e.t, backends.StateHeld, r.Existing.State)
			return r.Existing
		}, fp, nil, "Claim of a held record")
	})

	run(t, newStore, "ResolveCompleted", func(e *env) {
		e.ownedCompleted("k")
		e.requireOwned("k", func() backends.Record {
			r := e.resolve("k", nil, []byte("other"))
			require.False(e.t, r.Resolved)
			return r.Existing
		}, fp, outcome, "Resolve of a completed record")
	})

	run(t, newStore, "ResolveMismatch", func(e *env) {
		e.mustClaim("k", Token(), bytes.Clone(fp), longLease, longRetention)
		e.requireOwned("k", func() backends.Record {
			r := e.resolve("k", []byte("another fingerprint"), []byte("other"))
			require.False(e.t, r.Resolved)
			return r.Existing
		}, fp, nil, "Resolve with a mismatched fingerprint")
	})

	run(t, newStore, "LeaseHeldByAnother", func(e *env) {
		e.mustHold("k", Token(), bytes.Clone(fp), longLease)
		require.True(e.t, e.leaseHeld("k", Token(), longLease).Leased)
		e.requireOwned("k", func() backends.Record {
			r := e.leaseHeld("k", Token(), longLease)
			require.False(e.t, r.Leased)
			require.Equal(e.t, backends.StateHeld, r.Existing.State)
			return r.Existing
		}, fp, nil, "LeaseHeld of a record another reconciler leases")
	})

	run(t, newStore, "LeaseHeldCompleted", func(e *env) {
		e.ownedCompleted("k")
		e.requireOwned("k", func() backends.Record {
			r := e.leaseHeld("k", Token(), longLease)
			require.False(e.t, r.Leased)
			require.Equal(e.t, backends.StateCompleted, r.Existing.State)
			return r.Existing
		}, fp, outcome, "LeaseHeld of a completed record")
	})

	run(t, newStore, "AdminGet", func(e *env) {
		e.admin()
		e.ownedCompleted("k")
		e.requireOwned("k", func() backends.Record {
			rec, _, found := e.get("k")
			require.True(e.t, found)
			return rec
		}, fp, outcome, "Admin.Get")
	})

	run(t, newStore, "List", func(e *env) {
		e.lister()
		e.mustHold("k-held", Token(), bytes.Clone(fp), longLease)
		e.mustClaim("k-pending", Token(), bytes.Clone(fp), longLease, longRetention)
		for _, key := range []string{"k-held", "k-pending"} {
			e.requireOwned(key, func() backends.Record {
				seen, _ := e.walk(backends.ListParams{Scope: e.scope, KeyPrefix: "k-"})
				l, ok := seen[e.scope+"\x00"+key]
				require.True(e.t, ok, "%s is listed", key)
				return l.Record
			}, fp, nil, "List entry "+key)
		}
	})

	run(t, newStore, "ParamsAreNotKept", func(e *env) {
		// The store copies what it keeps of its parameters: a caller may
		// reuse its buffers as soon as a call returns.
		owner := Token()
		fpBuf, outBuf := bytes.Clone(fp), bytes.Clone(outcome)
		e.mustClaim("claimed", owner, fpBuf, longLease, longRetention)
		scribble(fpBuf)
		require.True(e.t, e.complete("claimed", owner, outBuf, longRetention))
		scribble(outBuf)
		e.requireCompleted(e.probe("claimed"), fp, outcome, "Claim and Complete")

		fpBuf, outBuf = bytes.Clone(fp), bytes.Clone(outcome)
		require.True(e.t, e.resolve("resolved", fpBuf, outBuf).Resolved)
		scribble(fpBuf)
		scribble(outBuf)
		e.requireCompleted(e.probe("resolved"), fp, outcome, "Resolve")
	})
}
