package backendtest

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// badNames are scopes and keys no record can have: NUL, invalid UTF-8,
// control characters, empty, and one byte over backends.MaxKeyLen (and
// MaxScopeLen). The core refuses them before calling a store; a store
// refuses them from a direct caller too, or its List walks would meet a
// record no cursor can name.
var badNames = []string{"k\x00", "k\xff", "k\t", "k\x7f", "", strings.Repeat("k", backends.MaxKeyLen+1)}

// BadNameCall is one call EachBadNameCall made.
type BadNameCall struct {
	// Op is the operation, as the stores name it in their errors:
	// "claim", "checkpoint", "hold", "leaseheld", "renew", "complete",
	// "release", "resolve", and "get", "delete" (Admin) and "watch"
	// (Watcher).
	Op string
	// Field is "scope" or "key", the one that was bad; Name is its value.
	Field, Name string
	// Err is what the call returned.
	Err error
	// Applied reports that the call said it did something: a claim, a
	// resolution, a record found or deleted.
	Applied bool
}

// EachBadNameCall calls every operation of store (with those of
// backends.Admin and backends.Watcher it implements) once with each scope
// no record can have, and key as the key, and once with each such key,
// and scope as the scope, and passes each call's result to check. A
// store's own tests use it to check the type of the error it returns;
// the conformance suite checks that each call fails and applies nothing.
func EachBadNameCall(ctx context.Context, store backends.Store, scope, key string, check func(BadNameCall)) {
	for _, bad := range badNames {
		for _, c := range []struct{ field, scope, key string }{{"key", scope, bad}, {"scope", bad, key}} {
			owner := Token()
			call := func(op string, applied bool, err error) {
				check(BadNameCall{Op: op, Field: c.field, Name: bad, Err: err, Applied: applied})
			}
			r, err := store.Claim(ctx, backends.ClaimParams{Scope: c.scope, Key: c.key, Owner: owner, Lease: longLease, Retention: longRetention})
			call("claim", r.Claimed, err)
			ok, err := store.Checkpoint(ctx, backends.CheckpointParams{Scope: c.scope, Key: c.key, Owner: owner, Steps: []byte("s")})
			call("checkpoint", ok, err)
			ok, err = store.Hold(ctx, backends.HoldParams{Scope: c.scope, Key: c.key, Owner: owner, For: longLease, Code: "c", Retention: longRetention})
			call("hold", ok, err)
			lr, err := store.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: c.scope, Key: c.key, Owner: owner, Lease: longLease})
			call("leaseheld", lr.Leased, err)
			ok, err = store.Renew(ctx, backends.RenewParams{Scope: c.scope, Key: c.key, Owner: owner, Lease: longLease})
			call("renew", ok, err)
			ok, err = store.Complete(ctx, backends.CompleteParams{Scope: c.scope, Key: c.key, Owner: owner, Outcome: []byte("v"), Retention: longRetention})
			call("complete", ok, err)
			ok, err = store.Release(ctx, backends.ReleaseParams{Scope: c.scope, Key: c.key, Owner: owner})
			call("release", ok, err)
			rr, err := store.Resolve(ctx, backends.ResolveParams{Scope: c.scope, Key: c.key, Owner: owner, Outcome: []byte("v"), Retention: longRetention})
			call("resolve", rr.Resolved, err)
			if a, ok := backends.As[backends.Admin](store); ok {
				rec, err := a.Get(ctx, c.scope, c.key)
				call("get", rec.State != 0, err)
				deleted, err := a.Delete(ctx, c.scope, c.key)
				call("delete", deleted, err)
			}
			if w, ok := backends.As[backends.Watcher](store); ok {
				_, stop, err := w.Watch(ctx, c.scope, c.key)
				if stop != nil {
					stop()
				}
				call("watch", false, err)
			}
		}
	}
}

// BadParamCall is one call EachBadOwnerOrFingerprintCall made.
type BadParamCall struct {
	// Op is the operation, as the stores name it in their errors:
	// "claim", "checkpoint", "renew", "hold", "leaseheld", "complete",
	// "release" or "resolve".
	Op string
	// Field is "owner" or "fingerprint", the one that was bad; Value
	// describes it: "empty", its length ("256 bytes"), "invalid UTF-8" or
	// "NUL".
	Field, Value string
	// Err is what the call returned.
	Err error
	// Applied reports that the call said it did something: a claim, a
	// renewal, a hold, a lease, a completion, a release, a resolution.
	Applied bool
}

// badOwners are the owner tokens no call may send (see "Inputs" in
// package backends, and backends.OwnerProblem): empty (Resolve excepted),
// one byte over backends.MaxOwnerLen, invalid UTF-8, and NUL, each with
// the Value a BadParamCall describes it by.
var badOwners = []struct{ value, owner string }{
	{"empty", ""},
	{strconv.Itoa(backends.MaxOwnerLen+1) + " bytes", strings.Repeat("o", backends.MaxOwnerLen+1)},
	{"invalid UTF-8", "o\xff\xfe"},
	{"NUL", "o\x00o"},
}

// EachBadOwnerOrFingerprintCall calls, on (scope, key), every operation
// that takes an owner once with each owner token no call may send (an
// empty one, except on Resolve, whose owner may be empty, one of
// backends.MaxOwnerLen+1 bytes, one of invalid UTF-8, one containing NUL),
// and Claim and Resolve once with a
// fingerprint of backends.MaxFingerprintLen+1 bytes (and a valid owner),
// and passes each call's result to check. Every call is valid but for the
// one field, and each sequence of calls on a bad owner (Claim,
// Checkpoint, Renew, Hold, LeaseHeld, Complete, Release, Resolve) would apply on a store that
// accepted it, from an absent key. A store's own tests use it to check
// the type of the error it returns; the conformance suite checks that
// each call fails and that nothing is stored.
func EachBadOwnerOrFingerprintCall(ctx context.Context, store backends.Store, scope, key string, check func(BadParamCall)) {
	for _, b := range badOwners {
		owner, value := b.owner, b.value
		call := func(op string, applied bool, err error) {
			check(BadParamCall{Op: op, Field: "owner", Value: value, Err: err, Applied: applied})
		}
		r, err := store.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Lease: longLease, Retention: longRetention})
		call("claim", r.Claimed, err)
		ok, err := store.Checkpoint(ctx, backends.CheckpointParams{Scope: scope, Key: key, Owner: owner, Steps: []byte("s")})
		call("checkpoint", ok, err)
		ok, err = store.Renew(ctx, backends.RenewParams{Scope: scope, Key: key, Owner: owner, Lease: longLease})
		call("renew", ok, err)
		ok, err = store.Hold(ctx, backends.HoldParams{Scope: scope, Key: key, Owner: owner, For: longLease, Code: "c", Retention: longRetention})
		call("hold", ok, err)
		lr, err := store.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: scope, Key: key, Owner: owner, Lease: longLease})
		call("leaseheld", lr.Leased, err)
		ok, err = store.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: []byte("v"), Retention: longRetention})
		call("complete", ok, err)
		ok, err = store.Release(ctx, backends.ReleaseParams{Scope: scope, Key: key, Owner: owner})
		call("release", ok, err)
		if owner != "" {
			rr, err := store.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: key, Owner: owner, Outcome: []byte("v"), Retention: longRetention})
			call("resolve", rr.Resolved, err)
		}
	}
	fp := bytes.Repeat([]byte{0xfe}, backends.MaxFingerprintLen+1)
	call := func(op string, applied bool, err error) {
		check(BadParamCall{Op: op, Field: "fingerprint", Value: fmt.Sprintf("%d bytes", len(fp)), Err: err, Applied: applied})
	}
	r, err := store.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Fingerprint: fp, Owner: Token(), Lease: longLease, Retention: longRetention})
	call("claim", r.Claimed, err)
	rr, err := store.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: key, Fingerprint: fp, Owner: Token(), Outcome: []byte("v"), Retention: longRetention})
	call("resolve", rr.Resolved, err)
}

// badHelds are the held codes and messages no Hold may store (see
// "Inputs" in package backends, and backends.HeldProblem): one byte over
// backends.MaxHeldCodeLen or MaxHeldMessageLen (the message's bytes of
// two-byte characters but the last), invalid UTF-8, and NUL. Each comes
// with a valid other half.
var badHelds = []struct{ field, value, code, message string }{
	{"code", "65 bytes", strings.Repeat("c", backends.MaxHeldCodeLen+1), "m"},
	{"message", "513 bytes", "c", strings.Repeat("é", backends.MaxHeldMessageLen/2) + "m"},
	{"code", "invalid UTF-8", "c\xff", "m"},
	{"message", "invalid UTF-8", "c", "m\xe9t"},
	{"code", "NUL", "c\x00", "m"},
	{"message", "NUL", "c", "m\x00"},
}

// EachBadHeldCall calls Hold on (scope, key) as owner once with each held
// code or message no Hold may store (one byte too long, invalid UTF-8, or
// containing NUL: backends.HeldProblem), the other half valid, and passes
// each call's result to check, with Op "hold", Field "code" or "message"
// and Value "65 bytes", "513 bytes", "invalid UTF-8" or "NUL". When owner
// owns a pending record at the key, each Hold would apply on a store that
// accepted it. A store's own tests use it to check the type of the error
// it returns; the conformance suite checks that each call fails and
// changes nothing.
func EachBadHeldCall(ctx context.Context, store backends.Store, scope, key, owner string, check func(BadParamCall)) {
	for _, b := range badHelds {
		ok, err := store.Hold(ctx, backends.HoldParams{Scope: scope, Key: key, Owner: owner, For: longLease, Code: b.code, Message: b.message, Retention: longRetention})
		check(BadParamCall{Op: "hold", Field: b.field, Value: b.value, Err: err, Applied: ok})
	}
}

func exerciseInput(t *testing.T, newStore NewStore) {
	// Every operation with a bad scope or key returns an error, not a
	// panic and not a claim, and leaves no record a List walk meets.
	run(t, newStore, "RefusesNamesNoRecordCanHave", func(e *env) {
		marker := "k-" + Token() // the key of the records under a bad scope
		EachBadNameCall(e.ctx, e.store, e.scope, marker, func(c BadNameCall) {
			msg := fmt.Sprintf("%s with %s %.40q", c.Op, c.Field, c.Name)
			require.Error(e.t, c.Err, msg)
			require.False(e.t, c.Applied, msg)
		})
		if _, ok := backends.As[backends.Lister](e.store); !ok {
			return
		}
		seen, _ := e.walk(backends.ListParams{Scope: e.scope})
		require.Empty(e.t, seen, "no record under a bad key")
		seen, _ = e.walk(backends.ListParams{KeyPrefix: marker})
		require.Empty(e.t, seen, "no record under a bad scope")
	})
	// Every operation with an owner token or a fingerprint no call may
	// send returns an error, not a panic and not an applied write, and
	// stores nothing: on an absent key, and on a pending and a held
	// record, which stay as they were.
	run(t, newStore, "RefusesOwnersAndFingerprintsOutOfBounds", func(e *env) {
		EachBadOwnerOrFingerprintCall(e.ctx, e.store, e.scope, "absent", func(c BadParamCall) {
			msg := fmt.Sprintf("%s with %s %s on an absent key", c.Op, c.Value, c.Field)
			require.Error(e.t, c.Err, msg)
			require.False(e.t, c.Applied, msg)
		})
		require.True(e.t, e.probe("absent").Claimed, "nothing stored for the absent key")

		// Without a fingerprint, so that a Resolve with the long one would
		// match, and apply, on a store that accepted it.
		longFP := bytes.Repeat([]byte{0xfe}, backends.MaxFingerprintLen+1)
		owner, long := Token(), badOwners[1].owner
		e.mustClaim("pending", owner, nil, longLease, longRetention)
		e.mustHold("held", Token(), nil, longLease)
		for _, key := range []string{"pending", "held"} {
			for _, bad := range badOwners {
				msg := fmt.Sprintf("%s record, owner %s", key, bad.value)
				lr, err := e.store.LeaseHeld(e.ctx, backends.LeaseHeldParams{Scope: e.scope, Key: key, Owner: bad.owner, Lease: longLease})
				require.Error(e.t, err, "leaseheld: "+msg)
				require.False(e.t, lr.Leased, "leaseheld: "+msg)
			}
			rr, err := e.store.Resolve(e.ctx, backends.ResolveParams{Scope: e.scope, Key: key, Owner: long, Outcome: []byte("v"), Retention: longRetention})
			require.Error(e.t, err, "resolve with a long owner, "+key)
			require.False(e.t, rr.Resolved, "resolve with a long owner, "+key)
			rr, err = e.store.Resolve(e.ctx, backends.ResolveParams{Scope: e.scope, Key: key, Fingerprint: longFP, Owner: Token(), Outcome: []byte("v"), Retention: longRetention})
			require.Error(e.t, err, "resolve with a long fingerprint, "+key)
			require.False(e.t, rr.Resolved, "resolve with a long fingerprint, "+key)
		}
		e.requirePending(e.probe("pending"), nil, "the pending record is untouched")
		e.requireHeld(e.probe("held"), nil, "the held record is untouched")
		require.True(e.t, e.leaseHeld("held", Token(), longLease).Leased, "no reconciler lease was given on the held record")
		require.True(e.t, e.complete("pending", owner, []byte("v"), longRetention), "the pending claim is still its owner's")
	})
	// A Hold with a code or a message no record can store returns an
	// error, not a panic and not an applied hold, and changes nothing: the
	// pending record stays pending and its owner's, and a held record (a
	// re-sent Hold by its owner) keeps its code and message.
	run(t, newStore, "RefusesHeldCodesAndMessagesOutOfBounds", func(e *env) {
		owner, holder := Token(), Token()
		e.mustClaim("pending", owner, nil, longLease, longRetention)
		e.mustHold("held", holder, nil, longLease)
		for _, c := range []struct{ key, owner string }{{"pending", owner}, {"held", holder}} {
			EachBadHeldCall(e.ctx, e.store, e.scope, c.key, c.owner, func(b BadParamCall) {
				msg := fmt.Sprintf("hold of the %s record, %s: %s", c.key, b.Field, b.Value)
				require.Error(e.t, b.Err, msg)
				require.False(e.t, b.Applied, msg)
			})
		}
		e.requirePending(e.probe("pending"), nil, "the pending record is untouched")
		e.requireHeld(e.probe("held"), nil, "the held record keeps its code and message")
		require.True(e.t, e.complete("pending", owner, []byte("v"), longRetention), "the pending claim is still its owner's")
	})
}
