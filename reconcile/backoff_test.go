package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/reconcile"
)

// centuryLease is a Reconciler's lease of 100 years: a key left leased
// with it is stuck for good.
const centuryLease = 100 * 365 * 24 * time.Hour

// requireFree checks that no live lease is left on a held key: another
// Reconciler, over the store without faults, resolves it at once.
func requireFree(t *testing.T, store backends.Store, scope, key string) {
	t.Helper()
	rec, err := store.(backends.Admin).Get(t.Context(), scope, key)
	require.NoError(t, err)
	require.NotZero(t, rec.State)
	require.Equal(t, backends.StateHeld, rec.State)
	require.Less(t, rec.LeaseRemaining, time.Hour, "the reconciler's lease was ended")
	other, err := reconcile.New(once.New(store), settledCheck, reconcile.Config{Scope: scope, Lease: centuryLease})
	require.NoError(t, err)
	rep, err := other.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, rep.Resolved, "another Reconciler takes the key at once")
	rec, err = store.(backends.Admin).Get(t.Context(), scope, key)
	require.NoError(t, err)
	require.Equal(t, backends.StateCompleted, rec.State)
}

// TestReconcilerEndsItsLeaseOnAStoreError: when the store fails after the
// Reconciler leased a key (Resolve fails, or the LeaseHeld itself fails,
// its lease possibly taken), Pass returns the *StoreError and the key is
// not left leased, even with an extreme Lease: another Reconciler takes it
// at once.
func TestReconcilerEndsItsLeaseOnAStoreError(t *testing.T) {
	for _, lease := range []time.Duration{centuryLease, math.MaxInt64} {
		for _, op := range []string{"resolve", "leaseheld"} {
			t.Run(fmt.Sprint(op, "/", lease), func(t *testing.T) {
				f := newReconcileFaults()
				holdKeys(t, f, 3)
				if op == "resolve" {
					f.failResolve(errResolveDown, victimKey)
				} else { // the lease is taken, then the reply is lost
					f.set(func(f *reconcileFaults) {
						f.leaseHeld = func(p backends.LeaseHeldParams) error {
							if p.Key == victimKey && p.Lease > 1 {
								_, _ = f.Store.LeaseHeld(context.Background(), p)
								return errResolveDown
							}
							return nil
						}
					})
				}
				rc, err := reconcile.New(once.New(f), settledCheck, reconcile.Config{Lease: lease})
				require.NoError(t, err)
				for {
					rep, err := rc.Pass(t.Context())
					if err != nil {
						var se *once.StoreError
						require.ErrorAs(t, err, &se)
						require.Equal(t, op, se.Op)
						require.ErrorIs(t, err, errResolveDown)
						require.Empty(t, rep.Errors, "ending the lease did not fail")
						break
					}
					require.False(t, rep.Done, "the victim's failure ends a pass")
				}
				requireFree(t, f.Store, victimScope, victimKey)
			})
		}
	}
}

// TestReconcilerEndsItsLeaseWhenItsContextEnds: a pass whose context ends
// while the Check asks (Run stopping) still ends the key's lease,
// which would otherwise last the whole extreme Lease: whether the verdict
// is not settled (the unlease), or settled (its Resolve fails on the
// context).
func TestReconcilerEndsItsLeaseWhenItsContextEnds(t *testing.T) {
	for _, settled := range []bool{false, true} {
		t.Run(fmt.Sprint("settled=", settled), func(t *testing.T) {
			f := newReconcileFaults()
			holdKeys(t, f, 1)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			rc, err := reconcile.New(once.New(f), func(context.Context, reconcile.HeldKey) (reconcile.Verdict[string], error) {
				cancel() // the caller stops while the service answers
				return reconcile.Verdict[string]{Settled: settled, Value: "late"}, nil
			}, reconcile.Config{Lease: centuryLease})
			require.NoError(t, err)
			rep, err := rc.Pass(ctx)
			require.NoError(t, err)
			require.Zero(t, reconcile.Backoffs(rc), "the end of the context backs no key off")
			if settled { // the verdict is stored all the same
				require.Equal(t, 1, rep.Resolved)
				v, err := once.Do(t.Context(), once.New(f.Store).Scope("shop-0"), "order-0000", nil,
					func(context.Context) (string, error) { return "again", nil })
				require.NoError(t, err)
				require.Equal(t, "late", v)
				return
			}
			require.Equal(t, 1, rep.LeftHeld)
			requireFree(t, f.Store, "shop-0", "order-0000")
		})
	}
}

// TestReconcilerKeepsItsLeaseOwnerWhenEndingItFails: when ending the
// lease fails too (the store is still down), Pass returns the first
// error, reports the second in Errors, and remembers the lease's owner:
// once the store is back and the backoff over, this Reconciler takes the
// key again under that lease (which no other Reconciler can before the
// extreme Lease ends) and resolves it.
func TestReconcilerKeepsItsLeaseOwnerWhenEndingItFails(t *testing.T) {
	f := newReconcileFaults()
	holdKeys(t, f, 1)
	f.set(func(f *reconcileFaults) {
		f.resolve = func(backends.ResolveParams) error { return errResolveDown }
		f.leaseHeld = func(p backends.LeaseHeldParams) error {
			if p.Lease == 1 {
				return errors.New("still down")
			}
			return nil
		}
	})
	clock := newFakeClock()
	rc, err := reconcile.New(once.New(f), settledCheck, reconcile.Config{Lease: centuryLease})
	require.NoError(t, err)
	reconcile.WithClock(rc, clock.Now)
	rep, err := rc.Pass(t.Context())
	var se *once.StoreError
	require.ErrorAs(t, err, &se)
	require.Equal(t, "resolve", se.Op, "the first error is returned")
	require.Len(t, rep.Errors, 1)
	require.ErrorContains(t, rep.Errors[0], "shop-0/order-0000: once: store leaseheld: still down")

	f.set(func(f *reconcileFaults) { f.resolve, f.leaseHeld = nil, nil }) // the store is back
	other, err := reconcile.New(once.New(f.Store), settledCheck, reconcile.Config{})
	require.NoError(t, err)
	rep, err = other.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, rep.Busy, "the lease could not be ended: it is still live")

	rep, err = rc.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, rep.Skipped, "in backoff")
	clock.Advance(reconcile.BackoffMin)
	rep, err = rc.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, rep.Resolved, "the same owner takes its own lease again")
	require.Zero(t, reconcile.Backoffs(rc))
}

// TestReconcilerMakesProgressPastFailingKeys: keys whose Resolve keeps
// failing neither block the keys listed after them nor make a later pass
// ask again the keys this walk already asked: each pass that a failure
// ends is resumed after the failed key, so one walk asks every key once.
// The failed keys are then skipped (Skipped) until their backoff ends,
// which doubles with each consecutive failure up to ReconcileBackoffMax;
// a success forgets them.
func TestReconcilerMakesProgressPastFailingKeys(t *testing.T) {
	const n = 40
	f := newReconcileFaults()
	keys := holdKeys(t, f, n)
	var failing []string
	for i, k := range keys {
		if i%7 == 3 {
			failing = append(failing, k.key)
		}
	}
	f.failResolve(errResolveDown, failing...)
	asked := map[string]int{}
	check := func(_ context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
		asked[k.Key]++
		if k.Key[len(k.Key)-1] == '5' { // not settled yet: asked again on the next walk only
			return reconcile.Verdict[string]{}, nil
		}
		return reconcile.Verdict[string]{Settled: true, Value: "charge-" + k.Key}, nil
	}
	clock := newFakeClock()
	rc, err := reconcile.New(once.New(f), check, reconcile.Config{Batch: 16, Lease: centuryLease})
	require.NoError(t, err)
	reconcile.WithClock(rc, clock.Now)

	// walk passes until one reaches the end of the held keys, and returns
	// the store errors and the keys skipped on the way.
	walk := func() (errs, skipped int) {
		for range 4 * n {
			rep, err := rc.Pass(t.Context())
			skipped += rep.Skipped
			if err != nil {
				require.ErrorIs(t, err, errResolveDown)
				errs++
			}
			if rep.Done {
				return errs, skipped
			}
		}
		t.Fatal("the walk does not end")
		return 0, 0
	}
	errs, skipped := walk()
	require.Equal(t, len(failing), errs, "one error per failing key")
	require.Zero(t, skipped)
	for _, k := range keys {
		require.Equal(t, 1, asked[k.key], "%s asked once in the walk", k.key)
	}
	require.Equal(t, len(failing), reconcile.Backoffs(rc))

	// Within the backoff: skipped, never asked, no error.
	clear(asked)
	errs, skipped = walk()
	require.Zero(t, errs)
	require.Equal(t, len(failing), skipped)
	for _, k := range failing {
		require.Zero(t, asked[k])
	}

	// Each consecutive failure doubles the backoff, up to its cap.
	for _, wait := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 32 * time.Second, time.Minute, time.Minute} {
		clock.Advance(wait - time.Nanosecond)
		errs, skipped = walk()
		require.Zero(t, errs, "still in backoff %v", wait)
		require.Equal(t, len(failing), skipped)
		clock.Advance(time.Nanosecond)
		errs, skipped = walk()
		require.Equal(t, len(failing), errs, "retried after %v", wait)
		require.Zero(t, skipped)
	}
	require.Equal(t, reconcile.BackoffMax, time.Minute)

	// The store is back: once the backoff ends, the keys are resolved and
	// forgotten.
	f.failResolve(nil)
	clock.Advance(reconcile.BackoffMax)
	errs, _ = walk()
	require.Zero(t, errs)
	require.Zero(t, reconcile.Backoffs(rc))
	var unsettled int64
	for _, k := range keys {
		rec, err := f.Get(t.Context(), k.scope, k.key)
		require.NoError(t, err)
		if k.key[len(k.key)-1] == '5' {
			unsettled++
			require.Equal(t, backends.StateHeld, rec.State, k.key)
			continue
		}
		require.Equal(t, backends.StateCompleted, rec.State, k.key)
	}
	counts, err := f.Count(t.Context())
	require.NoError(t, err)
	require.Equal(t, unsettled, counts.Held, "only the unsettled keys are held")
}

// TestReconcilerBoundsItsBackoffs: a Reconciler remembers at most
// MaxReconcileBackoffs failed keys, however many fail.
func TestReconcilerBoundsItsBackoffs(t *testing.T) {
	n := reconcile.MaxBackoffs + 20
	f := newReconcileFaults()
	holdKeys(t, f, n)
	f.failResolve(errResolveDown)
	rc, err := reconcile.New(once.New(f), settledCheck, reconcile.Config{Batch: 1000})
	require.NoError(t, err)
	reconcile.WithClock(rc, newFakeClock().Now)
	require.Equal(t, n, walkCountingErrors(t, rc, n, reconcile.MaxBackoffs), "each key failed once in the walk")
	require.Equal(t, reconcile.MaxBackoffs, reconcile.Backoffs(rc))
}

// walkCountingErrors runs rc's passes over its n held keys until one
// reports Done, and returns how many of them returned an error. It fails
// t when the walk takes more than 2n passes or rc remembers more than
// bound keys after any pass.
func walkCountingErrors(t *testing.T, rc *reconcile.Job[string], n, bound int) int {
	t.Helper()
	errs := 0
	for pass := 0; ; pass++ {
		require.Less(t, pass, 2*n, "the walk does not end")
		rep, err := rc.Pass(t.Context())
		require.LessOrEqual(t, reconcile.Backoffs(rc), bound)
		if err != nil {
			errs++
		}
		if rep.Done {
			return errs
		}
	}
}

// TestReconcilerBackoffModel drives a Reconciler over a store whose
// LeaseHeld and Resolve fail at random, with a clock stepped at random
// between passes, and checks it against a model of the backoff: a key is
// asked only when its backoff is over, each failure starts the next
// backoff, each other key examined is counted in Skipped, no held key is
// left leased after a pass unless ending its lease failed; once the faults
// stop every key is resolved, with the service's answer.
func TestReconcilerBackoffModel(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	const n = 48 // enough that some keys are still held when the walk meets each case
	f := newReconcileFaults()
	keys := holdKeys(t, f, n)
	clock := newFakeClock()

	type modelKey struct {
		failures int
		until    time.Time
		stuck    bool // ending its lease failed: it may be leased still
	}
	model := map[string]*modelKey{}
	for _, k := range keys {
		model[k.key] = &modelKey{}
	}
	faulty := true
	attempts := 0      // in the pass
	var current string // the key of the attempt in progress
	failedNow := false
	finish := func() { // folds the attempt in progress into the model
		if current == "" {
			return
		}
		m := model[current]
		if failedNow {
			m.failures++
			d := reconcile.BackoffMin << min(m.failures-1, 10)
			m.until = clock.Now().Add(min(d, reconcile.BackoffMax))
		} else {
			m.failures, m.until = 0, time.Time{}
		}
		current, failedNow = "", false
	}
	fail := func() bool { return faulty && rng.IntN(4) == 0 }
	f.set(func(f *reconcileFaults) {
		f.leaseHeld = func(p backends.LeaseHeldParams) error {
			if p.Lease > 1 { // a new attempt
				finish()
				attempts++
				current = p.Key
				m := model[p.Key]
				require.False(t, clock.Now().Before(m.until), "%s leased in backoff", p.Key)
			}
			if fail() {
				failedNow = true
				if p.Lease == 1 {
					model[p.Key].stuck = true
				}
				return errResolveDown
			}
			if p.Lease == 1 {
				model[p.Key].stuck = false
			}
			return nil
		}
		f.resolve = func(backends.ResolveParams) error {
			if fail() {
				failedNow = true
				return errResolveDown
			}
			return nil
		}
	})
	check := func(_ context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
		if rng.IntN(3) == 0 {
			return reconcile.Verdict[string]{}, nil
		}
		return reconcile.Verdict[string]{Settled: true, Value: "charge-" + k.Key}, nil
	}
	rc, err := reconcile.New(once.New(f), check, reconcile.Config{Batch: 10, Lease: centuryLease})
	require.NoError(t, err)
	reconcile.WithClock(rc, clock.Now)

	pass := func() reconcile.Report {
		inBackoff := 0
		for _, m := range model {
			if clock.Now().Before(m.until) {
				inBackoff++
			}
		}
		attempts = 0
		rep, err := rc.Pass(t.Context())
		if err != nil {
			require.ErrorIs(t, err, errResolveDown)
		}
		finish()
		require.LessOrEqual(t, rep.Skipped, inBackoff)
		require.Equal(t, rep.Examined, attempts+rep.Skipped, "every key examined is attempted or skipped")
		// The key whose store error ended the pass is counted in none of
		// them, or in LeftHeld when ending its lease was that error.
		counted := rep.Resolved + rep.LeftHeld + rep.Busy + rep.Skipped
		require.LessOrEqual(t, counted, rep.Examined)
		require.GreaterOrEqual(t, counted, rep.Examined-boolIntN(err != nil))
		for _, k := range keys {
			rec, gerr := f.Get(t.Context(), k.scope, k.key)
			require.NoError(t, gerr)
			if rec.State == backends.StateHeld && !model[k.key].stuck {
				require.Less(t, rec.LeaseRemaining, time.Hour, "%s left leased", k.key)
			}
		}
		return rep
	}
	var skipped, strandedSeen int
	for range 300 {
		skipped += pass().Skipped
		for _, m := range model {
			strandedSeen += boolIntN(m.stuck)
		}
		clock.Advance(time.Duration(rng.IntN(600)) * time.Millisecond) // a walk (5 passes) spans about one first backoff
	}
	require.Positive(t, skipped, "the walk met keys in backoff")
	require.Positive(t, strandedSeen, "the walk met leases it could not end")
	faulty = false
	for range 20 * n {
		clock.Advance(reconcile.BackoffMax)
		counts, err := f.Count(t.Context())
		require.NoError(t, err)
		if counts.Held == 0 {
			break
		}
		pass()
	}
	for _, k := range keys {
		v, err := once.Do(t.Context(), once.New(f.Store).Scope(k.scope), k.key, once.Fingerprint("fp"), func(context.Context) (string, error) {
			t.Errorf("%s ran again", k.key)
			return "", nil
		})
		require.NoError(t, err)
		require.Equal(t, "charge-"+k.key, v)
	}
}

func boolIntN(b bool) int {
	if b {
		return 1
	}
	return 0
}
