package reconcile_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/reconcile"
)

// errBlip is a store failure of the LeaseHeld that ends a lease.
var errBlip = errors.New("store blip")

// failUnlease makes every LeaseHeld that ends a lease (Lease 1) fail.
func failUnlease(f *reconcileFaults) {
	f.leaseHeld = func(p backends.LeaseHeldParams) error {
		if p.Lease == 1 {
			return errBlip
		}
		return nil
	}
}

// requireTakenBack checks that the key of holdKeys(t, f, 1) is still
// leased by rc, whose lease no other Reconciler can take, and that rc's
// next Pass (with the store back and no backoff to wait for) takes the
// lease back and resolves the key.
func requireTakenBack(t *testing.T, f *reconcileFaults, rc *reconcile.Job[string]) {
	t.Helper()
	f.set(func(f *reconcileFaults) { f.resolve, f.leaseHeld = nil, nil }) // the store is back
	other, err := reconcile.New(once.New(f.Store), settledCheck, reconcile.Config{})
	require.NoError(t, err)
	rep, err := other.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, rep.Busy, "the lease is live: only its owner may take it")
	rep, err = rc.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, rep.Skipped, "no backoff")
	require.Equal(t, 1, rep.Resolved, "the same owner takes its lease back")
	require.Zero(t, reconcile.Backoffs(rc), "and forgets the key")
	rec, err := f.Get(t.Context(), "shop-0", "order-0000")
	require.NoError(t, err)
	require.Equal(t, backends.StateCompleted, rec.State)
}

// TestReconcilerKeepsItsLeaseOwnerWhenItsContextEnds: a pass whose
// context ends while the Check asks (Run stopping) and whose
// detached unlease then fails (a store blip) still remembers the lease's
// owner, with no backoff: with an extreme Lease, no other Reconciler can
// take the key, and the next Pass of this one takes its lease back. The
// same holds for a LeaseHeld that the context cut off in flight and that
// reached the store after the lease was ended.
func TestReconcilerKeepsItsLeaseOwnerWhenItsContextEnds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		settled bool // the verdict when the context ends
		late    bool // the LeaseHeld is cut off, and applies late
	}{
		{name: "unsettled"},
		{name: "settled", settled: true},
		{name: "LeaseHeld cut off", late: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newReconcileFaults()
			holdKeys(t, f, 1)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var inFlight []backends.LeaseHeldParams
			if tc.late {
				f.set(func(f *reconcileFaults) {
					f.leaseHeld = func(p backends.LeaseHeldParams) error {
						if p.Lease > 1 && len(inFlight) == 0 {
							cancel()
							inFlight = append(inFlight, p)
							return context.Canceled
						}
						return nil
					}
				})
			} else {
				f.set(failUnlease)
				if tc.settled { // the Resolve, detached from the context, meets the blip
					f.set(func(f *reconcileFaults) { f.resolve = func(backends.ResolveParams) error { return errBlip } })
				}
			}
			calls := 0
			rc, err := reconcile.New(once.New(f), func(context.Context, reconcile.HeldKey) (reconcile.Verdict[string], error) {
				calls++
				if calls == 1 && !tc.late {
					cancel() // the caller stops while the service answers
					return reconcile.Verdict[string]{Settled: tc.settled, Value: "late"}, nil
				}
				return reconcile.Verdict[string]{Settled: true, Value: "charge"}, nil
			}, reconcile.Config{Lease: math.MaxInt64})
			require.NoError(t, err)
			reconcile.WithClock(rc, newFakeClock().Now)
			rep, err := rc.Pass(ctx)
			switch {
			case tc.late:
				require.ErrorIs(t, err, context.Canceled)
			case tc.settled: // the Resolve fails on the blip, then the unlease
				require.ErrorIs(t, err, errBlip)
				var se *once.StoreError
				require.ErrorAs(t, err, &se)
				require.Equal(t, "resolve", se.Op)
				require.Len(t, rep.Errors, 1)
				require.ErrorIs(t, rep.Errors[0], errBlip)
			default: // the unlease fails
				require.ErrorIs(t, err, errBlip)
			}
			for _, p := range inFlight { // it reaches the store now
				_, err := f.Store.LeaseHeld(context.Background(), p)
				require.NoError(t, err)
			}
			require.Equal(t, 1, reconcile.Backoffs(rc), "the lease's owner is remembered")
			requireTakenBack(t, f, rc)
		})
	}
}

// TestReconcilerTakesBackALeaseAfterAStorePanic: a store that panics with
// the key leased to the Reconciler (in Resolve, in the unlease after the
// verdict, or in LeaseHeld after taking the lease) leaves the lease live:
// the panic escapes Pass, and no further store call is made, but the
// lease's owner is remembered (the key backed off), so this Reconciler
// takes the lease back once the backoff ends.
func TestReconcilerTakesBackALeaseAfterAStorePanic(t *testing.T) {
	for name, set := range map[string]func(f *reconcileFaults){
		"Resolve": func(f *reconcileFaults) {
			f.resolve = func(backends.ResolveParams) error { panic(errHookBoom) }
		},
		"unlease": func(f *reconcileFaults) {
			f.leaseHeld = func(p backends.LeaseHeldParams) error {
				if p.Lease == 1 {
					panic(errHookBoom)
				}
				return nil
			}
		},
		"LeaseHeld": func(f *reconcileFaults) {
			f.leaseHeld = func(p backends.LeaseHeldParams) error {
				_, _ = f.Store.LeaseHeld(context.Background(), p)
				panic(errHookBoom)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := newReconcileFaults()
			holdKeys(t, f, 1)
			f.set(set)
			calls := 0
			rc, err := reconcile.New(once.New(f), func(context.Context, reconcile.HeldKey) (reconcile.Verdict[string], error) {
				calls++
				// Unsettled first when the unlease panics, so that it is
				// called.
				return reconcile.Verdict[string]{Settled: calls > 1 || name != "unlease", Value: "charge"}, nil
			}, reconcile.Config{Lease: centuryLease})
			require.NoError(t, err)
			clock := newFakeClock()
			reconcile.WithClock(rc, clock.Now)
			require.PanicsWithValue(t, errHookBoom, func() { _, _ = rc.Pass(t.Context()) })
			require.Equal(t, 1, reconcile.Backoffs(rc), "the lease's owner is remembered")

			f.set(func(f *reconcileFaults) { f.resolve, f.leaseHeld = nil, nil })
			rep, err := rc.Pass(t.Context())
			require.NoError(t, err)
			require.Equal(t, 1, rep.Skipped, "backed off, as after a store error")
			clock.Advance(reconcile.BackoffMin)
			requireTakenBack(t, f, rc)
		})
	}
}

// TestReconcilerKeepsEveryLeaseItCouldNotEnd: when more than
// MaxReconcileBackoffs keys fail their Resolve and then the unlease, with
// an extreme Lease, the Reconciler forgets none of their leases' owners
// (up to MaxReconcileKeptLeases): once the store is back and the backoff
// over, it takes every lease back, and no key is left leased for good.
func TestReconcilerKeepsEveryLeaseItCouldNotEnd(t *testing.T) {
	n := reconcile.MaxBackoffs + 20
	f := newReconcileFaults()
	holdKeys(t, f, n)
	f.set(func(f *reconcileFaults) {
		f.resolve = func(backends.ResolveParams) error { return errResolveDown }
		failUnlease(f)
	})
	clock := newFakeClock()
	rc, err := reconcile.New(once.New(f), settledCheck, reconcile.Config{Batch: 1000, Lease: math.MaxInt64})
	require.NoError(t, err)
	reconcile.WithClock(rc, clock.Now)
	walk := func() (errs int) {
		for pass := 0; ; pass++ {
			require.Less(t, pass, 2*n, "the walk does not end")
			rep, err := rc.Pass(t.Context())
			if err != nil {
				errs++
			}
			if rep.Done {
				return errs
			}
		}
	}
	require.Equal(t, n, walk(), "each key failed once in the walk")
	require.Equal(t, n, reconcile.Backoffs(rc), "every lease's owner is kept")

	f.set(func(f *reconcileFaults) { f.resolve, f.leaseHeld = nil, nil })
	clock.Advance(reconcile.BackoffMin)
	require.Zero(t, walk())
	counts, err := f.Count(t.Context())
	require.NoError(t, err)
	require.Zero(t, counts.Held, "every key was resolved: none is left leased")
	require.Zero(t, reconcile.Backoffs(rc))
}

// TestReconcilerEndsTheLeasesItForgets: past MaxReconcileKeptLeases keys
// whose lease may still be its own, a Reconciler makes room by ending the
// lease of the one whose backoff ends first (its unlease is tried again)
// before forgetting it: a key it forgets is free for other Reconcilers.
func TestReconcilerEndsTheLeasesItForgets(t *testing.T) {
	if testing.Short() {
		t.Skip("holds more than MaxReconcileKeptLeases keys")
	}
	n := reconcile.MaxKeptLeases + 5
	f := newReconcileFaults()
	keys := holdKeys(t, f, n)
	unleases := map[string]int{}
	f.set(func(f *reconcileFaults) {
		f.resolve = func(backends.ResolveParams) error { return errResolveDown }
		f.leaseHeld = func(p backends.LeaseHeldParams) error {
			if p.Lease == 1 {
				if unleases[p.Key]++; unleases[p.Key] == 1 { // it fails after the Resolve only
					return errBlip
				}
			}
			return nil
		}
	})
	// Small pages, so that each Pass's Lists are small.
	rc, err := reconcile.New(once.New(f), settledCheck, reconcile.Config{Batch: 10, Lease: math.MaxInt64})
	require.NoError(t, err)
	reconcile.WithClock(rc, newFakeClock().Now)
	require.Equal(t, n, walkCountingErrors(t, rc, n, reconcile.MaxKeptLeases))
	require.Equal(t, reconcile.MaxKeptLeases, reconcile.Backoffs(rc))
	forgotten := 0
	for _, k := range keys {
		if unleases[k.key] < 2 {
			continue
		}
		forgotten++
		rec, err := f.Get(t.Context(), k.scope, k.key)
		require.NoError(t, err)
		require.Equal(t, backends.StateHeld, rec.State)
		require.Less(t, rec.LeaseRemaining, time.Second, "%s was unleased before it was forgotten", k.key)
	}
	require.Equal(t, n-reconcile.MaxKeptLeases, forgotten)
}

// TestReconcilerListsAgainAfterAStoreError: the Pass after one that a
// store error ended lists the page again instead of asking its rest as
// listed then: a key deleted meanwhile and held again by a new intent, too
// recently for OlderThan, is neither leased nor asked with its old record;
// the keys examined already are not asked again.
func TestReconcilerListsAgainAfterAStoreError(t *testing.T) {
	clock := newFakeClock()
	f := newReconcileFaultsAt(clock.Now)
	holdKeys(t, f, 3)
	clock.Advance(2 * time.Hour)
	page, err := f.List(t.Context(), backends.ListParams{State: backends.StateHeld, Limit: 3})
	require.NoError(t, err)
	require.Len(t, page.Records, 3)
	first, second, third := page.Records[0], page.Records[1], page.Records[2]
	f.failResolve(errResolveDown, first.Key)
	var asked []reconcile.HeldKey
	rc, err := reconcile.New(once.New(f), func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
		asked = append(asked, k)
		return settledCheck(ctx, k)
	}, reconcile.Config{OlderThan: time.Hour})
	require.NoError(t, err)
	_, err = rc.Pass(t.Context())
	require.ErrorIs(t, err, errResolveDown)
	require.Len(t, asked, 1)

	// The third key is deleted, and a new intent claims and holds it.
	deleted, err := f.Delete(t.Context(), third.Scope, third.Key)
	require.NoError(t, err)
	require.True(t, deleted)
	c, err := f.Claim(t.Context(), backends.ClaimParams{Scope: third.Scope, Key: third.Key, Fingerprint: []byte("fp2"), Owner: "new-intent", Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, c.Claimed)
	held, err := f.Hold(t.Context(), backends.HoldParams{Scope: third.Scope, Key: third.Key, Owner: "new-intent", For: backends.HoldUntilResolved, Code: "declined", Message: "card declined", Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, held)

	asked = nil
	rep, err := rc.Pass(t.Context())
	require.NoError(t, err)
	require.True(t, rep.Done)
	require.Equal(t, 1, rep.Examined, "the second key only: the first was examined, the third is too recent")
	require.Equal(t, 1, rep.Resolved)
	require.Len(t, asked, 1)
	require.Equal(t, second.Key, asked[0].Key)
	rec, err := f.Get(t.Context(), third.Scope, third.Key)
	require.NoError(t, err)
	require.Equal(t, backends.StateHeld, rec.State)
	require.Equal(t, "declined", rec.Held.Code)
	require.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0), "the new intent's hold was not leased")
}
