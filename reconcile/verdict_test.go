package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
	"github.com/stagedoor/once/reconcile"
)

// holdOne makes (scope, key) held with fingerprint fp through Do.
func holdOne(t *testing.T, sc once.Scope, key string, fp once.Fingerprint) {
	t.Helper()
	_, err := once.Do(t.Context(), sc, key, fp, func(context.Context) (string, error) {
		return "", once.Hold(errors.New("provider timeout"))
	})
	require.Error(t, err)
}

// notAnAnswer are the ways a caller marks an error as no answer: with Hold
// or Retry, directly or further down the chain.
var notAnAnswer = []struct {
	name string
	wrap func(error) error
}{
	{"hold", once.Hold},
	{"retry", once.Retry},
	{"wrapped-hold", func(err error) error { return fmt.Errorf("lookup: %w", once.Hold(err)) }},
	{"wrapped-retry", func(err error) error { return fmt.Errorf("lookup: %w", once.Retry(err)) }},
}

// TestReconcilerNeverStoresAHeldOrRetryableVerdict: a settled Verdict
// whose Err is marked with Hold or Retry (a lookup that wrapped its own
// failure with the helper fn uses) is no answer, so the Reconciler leaves
// the key held and counts it Failed with an *InvalidInputError; on main it
// stored the error as the key's final answer, replayed to every retry for
// the retention.
func TestReconcilerNeverStoresAHeldOrRetryableVerdict(t *testing.T) {
	for _, mark := range notAnAnswer {
		t.Run(mark.name, func(t *testing.T) {
			store := memory.New(nil)
			keeper := once.New(store, once.WithHoldFor(once.HoldUntilResolved))
			sc := keeper.Scope("shop")
			holdOne(t, sc, "order-1", once.Fingerprint("A"))
			rc, err := reconcile.New(keeper, func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
				return reconcile.Verdict[string]{Settled: true, Err: mark.wrap(errors.New("lookup timed out"))}, nil
			}, reconcile.Config{})
			require.NoError(t, err)
			rep, err := rc.Pass(t.Context())
			require.NoError(t, err)
			require.Zero(t, rep.Resolved, "a %s-marked verdict was stored as the key's final answer", mark.name)
			require.Equal(t, 1, rep.Failed)
			require.Equal(t, 1, rep.LeftHeld)
			require.Len(t, rep.Errors, 1)
			var inv *once.InvalidInputError
			require.ErrorAs(t, rep.Errors[0], &inv)
			require.Equal(t, "err", inv.Field)
			rec, err := store.Get(t.Context(), "shop", "order-1")
			require.NoError(t, err)
			require.NotZero(t, rec.State)
			require.Equal(t, backends.StateHeld, rec.State)
			require.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0), "the key is left leased")
		})
	}
}

// TestResolveRefusesAHeldOrRetryableError: once.Resolve refuses an error
// marked with Hold or Retry with an *InvalidInputError, before any store
// call, and leaves the key held; an unmarked error and one marked Final
// (even around a Hold) are stored as the final answer.
func TestResolveRefusesAHeldOrRetryableError(t *testing.T) {
	for _, mark := range notAnAnswer {
		t.Run(mark.name, func(t *testing.T) {
			store := memory.New(nil)
			sc := once.New(store, once.WithHoldFor(once.HoldUntilResolved)).Scope("shop")
			holdOne(t, sc, "order-1", nil)
			err := once.Resolve(t.Context(), sc, "order-1", nil, "", mark.wrap(errors.New("lookup timed out")))
			var inv *once.InvalidInputError
			require.ErrorAs(t, err, &inv)
			require.Equal(t, "err", inv.Field)
			require.ErrorAs(t, err, new(*once.InvalidInputError))
			rec, err := store.Get(t.Context(), "shop", "order-1")
			require.NoError(t, err)
			require.NotZero(t, rec.State)
			require.Equal(t, backends.StateHeld, rec.State)
		})
	}
	for name, answer := range map[string]error{
		"unmarked":        errors.New("card declined"),
		"final":           once.Final(errors.New("card declined")),
		"final-over-hold": once.Final(once.Hold(errors.New("card declined"))),
	} {
		t.Run(name, func(t *testing.T) {
			sc := once.New(memory.New(nil), once.WithHoldFor(once.HoldUntilResolved)).Scope("shop")
			holdOne(t, sc, "order-1", nil)
			require.NoError(t, once.Resolve(t.Context(), sc, "order-1", nil, "", answer))
			_, err := once.Do(t.Context(), sc, "order-1", nil, func(context.Context) (string, error) { return "ran", nil })
			require.EqualError(t, err, "card declined")
		})
	}
}

// TestReconcilerVerdictNeverBindsAnotherIntent: a Reconciler's verdict is
// the answer of the intent it listed as held, never of another: a key
// whose record expired while the lookup ran (a lookup that ignores its
// context outlives the lease), or that an operator deleted meanwhile, is
// a new intent, and a call with another fingerprint must run fn or get
// ErrKeyReused, never the old intent's verdict. The Reconciler's Resolve
// is fenced by its lease (backends.ResolveParams.OnlyLeased), so nothing
// is written to the absent key, and the new intent runs fn. On main the
// Reconciler resolved with no fingerprint, and the store wrote the absent
// key: every later call, with any fingerprint, replayed the old verdict.
func TestReconcilerVerdictNeverBindsAnotherIntent(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		for _, how := range []string{"expired-after-lease", "deleted-during-lease"} {
			t.Run(name+"/"+how, func(t *testing.T) {
				store := newStore(t)
				hold := time.Duration(once.HoldUntilResolved)
				if how == "expired-after-lease" {
					hold = time.Millisecond
				}
				keeper := once.New(store, once.WithHoldFor(hold), once.WithRetention(time.Second), once.WithLease(time.Second))
				sc := keeper.Scope("shop")
				holdOne(t, sc, "order-1", once.Fingerprint("intent-A"))

				asked, release := make(chan struct{}), make(chan struct{})
				check := func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
					close(asked)
					<-release // a slow downstream lookup that does not watch ctx
					return reconcile.Verdict[string]{Settled: true, Value: "charge-of-intent-A"}, nil
				}
				rc, err := reconcile.New(keeper, check, reconcile.Config{Lease: reconcile.MinLease})
				require.NoError(t, err)
				type result struct {
					rep reconcile.Report
					err error
				}
				done := make(chan result, 1)
				go func() { rep, err := rc.Pass(context.Background()); done <- result{rep, err} }()
				select {
				case <-asked:
				case r := <-done:
					t.Fatalf("the pass did not ask: %+v, %v", r.rep, r.err)
				}
				switch how {
				case "expired-after-lease":
					// The lease (1 s), the hold (1 ms) and the retention (1 s) end.
					time.Sleep(reconcile.MinLease + 400*time.Millisecond)
				case "deleted-during-lease":
					_, err := store.(backends.Admin).Delete(t.Context(), "shop", "order-1")
					require.NoError(t, err)
				}
				close(release)
				r := <-done
				require.NoError(t, r.err)
				require.Zero(t, r.rep.Resolved, "%+v", r.rep)
				require.Equal(t, 1, r.rep.Busy+r.rep.Failed, "%+v", r.rep)
				got, err := store.(backends.Admin).Get(t.Context(), "shop", "order-1")
				found := got.State != 0
				require.NoError(t, err)
				require.False(t, found, "the verdict was written to the absent key")

				// A new intent with another fingerprint runs.
				ran := false
				v, err := once.Do(t.Context(), sc, "order-1", once.Fingerprint("intent-B"), func(context.Context) (string, error) {
					ran = true
					return "charge-of-intent-B", nil
				})
				require.NoError(t, err)
				require.True(t, ran, "intent B (another fingerprint) replayed %q", v)
				require.Equal(t, "charge-of-intent-B", v)
			})
		}
	}
}

// TestReconcilerLateVerdictIsRefusedAfterItsLease: a slow Reconciler's
// verdict, returned after its lookup's deadline and its lease, is not
// stored over the live claim of a Do that took the key over once the hold
// and the lease ended (Config.Lease says it is refused); on main
// it landed, and the takeover's own outcome was dropped (ErrLeaseLost).
func TestReconcilerLateVerdictIsRefusedAfterItsLease(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			keeper := once.New(store, once.WithHoldFor(time.Millisecond), once.WithLease(time.Second))
			sc := keeper.Scope("shop")
			fp := once.Fingerprint("intent-A")
			holdOne(t, sc, "order-1", fp)

			asked, release := make(chan struct{}), make(chan struct{})
			check := func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
				close(asked)
				<-release // a lookup that does not watch ctx
				return reconcile.Verdict[string]{Settled: true, Value: "late-verdict"}, nil
			}
			rc, err := reconcile.New(keeper, check, reconcile.Config{Lease: reconcile.MinLease})
			require.NoError(t, err)
			type result struct {
				rep reconcile.Report
				err error
			}
			done := make(chan result, 1)
			go func() { rep, err := rc.Pass(context.Background()); done <- result{rep, err} }()
			<-asked
			time.Sleep(reconcile.MinLease + 300*time.Millisecond) // the lease ends; the hold ended long ago

			var r result
			out, err := once.DoOutcome(t.Context(), sc, "order-1", fp, func(context.Context) (string, error) {
				close(release) // the slow Reconciler answers while this takeover runs
				r = <-done
				return "charge-by-the-takeover", nil
			})
			require.NoError(t, err, "the takeover's outcome was dropped: the slow Reconciler resolved over its live claim")
			require.Equal(t, "charge-by-the-takeover", out.Value)
			require.NoError(t, r.err)
			require.Zero(t, r.rep.Resolved, "the slow Reconciler's Resolve, after its lease, landed")
		})
	}
}

// TestReconcilerDropsALateVerdict: a settled verdict that its
// Check returns after its context's deadline (three quarters of
// the lease) is not stored: the key stays held, unleased, and the key is
// counted Failed with ErrLateVerdict; the next pass asks again. On main
// it was stored.
func TestReconcilerDropsALateVerdict(t *testing.T) {
	store := memory.New(nil)
	keeper := once.New(store, once.WithHoldFor(once.HoldUntilResolved))
	sc := keeper.Scope("shop")
	holdOne(t, sc, "order-1", once.Fingerprint("A"))
	late := true
	rc, err := reconcile.New(keeper, func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
		if late {
			<-ctx.Done() // answers only once its deadline has passed
		}
		return reconcile.Verdict[string]{Settled: true, Value: "charged"}, nil
	}, reconcile.Config{Lease: reconcile.MinLease})
	require.NoError(t, err)
	rep, err := rc.Pass(t.Context())
	require.NoError(t, err)
	require.Zero(t, rep.Resolved)
	require.Equal(t, 1, rep.Failed)
	require.Len(t, rep.Errors, 1)
	require.ErrorIs(t, rep.Errors[0], reconcile.ErrLateVerdict)
	rec, err := store.Get(t.Context(), "shop", "order-1")
	require.NoError(t, err)
	require.NotZero(t, rec.State)
	require.Equal(t, backends.StateHeld, rec.State)
	require.LessOrEqual(t, rec.LeaseRemaining, time.Duration(0), "the key is left leased")

	late = false
	rep, err = rc.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, rep.Resolved, "%+v", rep)
}

// TestReconcilerLeaseIsCapped: a Config.Lease above
// MaxReconcileLease (math.MaxInt64 included) leases a key for
// MaxReconcileLease, so that a Reconciler that crashes mid-lookup leaves
// the key leased for that long at most; on main, for about 292 years.
func TestReconcilerLeaseIsCapped(t *testing.T) {
	for name, newStore := range testservers.Stores() {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			keeper := once.New(store, once.WithHoldFor(once.HoldUntilResolved))
			holdOne(t, keeper.Scope("shop"), "order-1", nil)
			var leased time.Duration
			rc, err := reconcile.New(keeper, func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
				rec, err := store.(backends.Admin).Get(ctx, k.Scope, k.Key)
				require.NoError(t, err)
				require.NotZero(t, rec.State)
				leased = rec.LeaseRemaining
				deadline, ok := ctx.Deadline()
				require.True(t, ok)
				require.LessOrEqual(t, time.Until(deadline), reconcile.MaxLease-reconcile.MaxLease/4)
				return reconcile.Verdict[string]{}, nil
			}, reconcile.Config{Lease: math.MaxInt64})
			require.NoError(t, err)
			_, err = rc.Pass(t.Context())
			require.NoError(t, err)
			require.Greater(t, leased, reconcile.MaxLease/2)
			require.LessOrEqual(t, leased, reconcile.MaxLease)
		})
	}
}
