package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/internal/testservers"
	"github.com/stagedoor/once/reconcile"
)

// heldOwner is the token of the claim that held a key, kept to attempt
// its late completion.
type heldOwner struct{ scope, key, owner string }

// holdKeys claims and holds n keys spread over three scopes, directly on
// the store, until resolved.
func holdKeys(t *testing.T, store backends.Store, n int) []heldOwner {
	t.Helper()
	ctx := context.Background()
	out := make([]heldOwner, n)
	for i := range n {
		k := heldOwner{scope: fmt.Sprintf("shop-%d", i%3), key: fmt.Sprintf("order-%04d", i), owner: fmt.Sprintf("owner-%04d", i)}
		r, err := store.Claim(ctx, backends.ClaimParams{Scope: k.scope, Key: k.key, Fingerprint: []byte("fp"), Owner: k.owner, Lease: time.Minute, Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, r.Claimed)
		ok, err := store.Hold(ctx, backends.HoldParams{Scope: k.scope, Key: k.key, Owner: k.owner, For: backends.HoldUntilResolved, Code: "timeout", Message: "provider timeout", Retention: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		out[i] = k
	}
	return out
}

// TestTwoReconcilersOverAThousandHeldKeys runs two Reconcilers at once
// over 1 000 held keys while the original owners try to complete late:
// every key is resolved exactly once, with the provider's answer, none is
// lost, and no late completion lands.
func TestTwoReconcilersOverAThousandHeldKeys(t *testing.T) {
	const n = 1000
	for name, newStore := range testservers.ListerStores() {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			keys := holdKeys(t, store, n)
			keeper := once.New(store)
			ctx := t.Context()

			var asked sync.Map // scope/key -> *atomic.Int32
			var unsure atomic.Int32
			check := func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[string], error) {
				c, _ := asked.LoadOrStore(k.Scope+"/"+k.Key, new(atomic.Int32))
				calls := c.(*atomic.Int32).Add(1)
				if k.Code != "timeout" {
					t.Errorf("%s/%s held with code %q, not timeout", k.Scope, k.Key, k.Code)
				}
				switch {
				case k.Key[len(k.Key)-1] == '7' && calls == 1:
					unsure.Add(1)
					return reconcile.Verdict[string]{}, nil // the provider does not know yet
				case k.Key[len(k.Key)-1] == '3' && calls == 1:
					return reconcile.Verdict[string]{}, errors.New("provider unreachable")
				case k.Key[len(k.Key)-1] == '9':
					return reconcile.Verdict[string]{Settled: true, Err: once.Final(errors.New("card declined"))}, nil
				}
				return reconcile.Verdict[string]{Settled: true, Value: "charge-" + k.Key}, nil
			}

			// Each Reconciler passes until the store holds no key: the stop
			// polls the store's state, not a count of idle passes, which a
			// slow peer (one that holds a lease while descheduled) can
			// exhaust before the keys it leases are settled.
			held := func() int64 {
				counts, err := store.(backends.Lister).Count(ctx)
				if err != nil {
					t.Error(err)
					return 0
				}
				return counts.Held
			}
			var resolved atomic.Int64
			var wg sync.WaitGroup
			for range 2 {
				rc, err := reconcile.New(keeper, check, reconcile.Config{Batch: 64, Lease: 10 * time.Second})
				require.NoError(t, err)
				wg.Go(func() {
					for {
						rep, err := rc.Pass(ctx)
						if err != nil {
							t.Error(err)
							return
						}
						resolved.Add(int64(rep.Resolved))
						if rep.Done && held() == 0 {
							return
						}
					}
				})
			}
			// The original owners wake up late and try to complete.
			var late atomic.Int32
			wg.Go(func() {
				for _, k := range keys {
					ok, err := store.Complete(ctx, backends.CompleteParams{Scope: k.scope, Key: k.key, Owner: k.owner, Outcome: []byte("late"), Retention: time.Hour})
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						late.Add(1)
					}
				}
			})
			wg.Wait()
			require.False(t, t.Failed())

			require.Zero(t, late.Load(), "no late completion of an original owner lands")
			require.Equal(t, int64(n), resolved.Load(), "each key resolved once, by one of the two")
			require.Positive(t, unsure.Load())
			for _, k := range keys {
				v, err := once.Do(ctx, keeper.Scope(k.scope), k.key, []byte("fp"), func(context.Context) (string, error) {
					t.Errorf("%s/%s ran again", k.scope, k.key)
					return "", nil
				})
				if k.key[len(k.key)-1] == '9' {
					require.ErrorContains(t, err, "card declined", k.key)
					continue
				}
				require.NoError(t, err, k.key)
				require.Equal(t, "charge-"+k.key, v, "the provider's answer, not a late owner's")
			}
			counts, err := store.(backends.Lister).Count(ctx)
			require.NoError(t, err)
			require.Zero(t, counts.Held, "none left held")
		})
	}
}

func TestReconcilerNeedsLister(t *testing.T) {
	_, err := reconcile.New(once.New(plainStore{memory.New(nil)}), func(context.Context, reconcile.HeldKey) (reconcile.Verdict[int], error) {
		return reconcile.Verdict[int]{}, nil
	}, reconcile.Config{})
	var invalid *once.InvalidInputError
	require.ErrorAs(t, err, &invalid)
	require.Contains(t, invalid.Reason, "backends.Lister")
}

// plainStore hides every optional interface of its store.
type plainStore struct{ backends.Store }

func TestReconcilerBoundsWorkPerPass(t *testing.T) {
	store := memory.New(nil)
	holdKeys(t, store, 25)
	rc, err := reconcile.New(once.New(store), func(context.Context, reconcile.HeldKey) (reconcile.Verdict[int], error) {
		return reconcile.Verdict[int]{}, nil // never settled
	}, reconcile.Config{Batch: 10})
	require.NoError(t, err)
	var examined []int
	for range 4 {
		rep, err := rc.Pass(t.Context())
		require.NoError(t, err)
		examined = append(examined, rep.Examined)
		require.Equal(t, rep.Examined, rep.LeftHeld)
	}
	require.Equal(t, []int{10, 10, 5, 10}, examined, "at most Batch per pass; the walk resumes, then starts over")
}

func TestReconcilerSurvivesAPanickingCheck(t *testing.T) {
	store := memory.New(nil)
	holdKeys(t, store, 3)
	rc, err := reconcile.New(once.New(store), func(_ context.Context, k reconcile.HeldKey) (reconcile.Verdict[int], error) {
		if k.Key == "order-0001" {
			panic("boom")
		}
		return reconcile.Verdict[int]{Settled: true, Value: 1}, nil
	}, reconcile.Config{})
	require.NoError(t, err)
	rep, err := rc.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, rep.Resolved)
	require.Equal(t, 1, rep.Failed)
	require.ErrorContains(t, rep.Errors[0], "panicked: boom")
}

// TestReconcilerEncodesWithItsCodec: a settled verdict's value is stored
// with Config.Codec, not the Keeper's codec, so callers that
// decode with that codec replay it.
func TestReconcilerEncodesWithItsCodec(t *testing.T) {
	store := memory.New(nil)
	keys := holdKeys(t, store, 1)
	keeper := once.New(store) // the default JSON codec
	rc, err := reconcile.New(keeper, func(context.Context, reconcile.HeldKey) (reconcile.Verdict[string], error) {
		return reconcile.Verdict[string]{Settled: true, Value: "charged"}, nil
	}, reconcile.Config{Codec: gobCodec{}})
	require.NoError(t, err)
	rep, err := rc.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, rep.Resolved)

	k := keys[0]
	ran := func(context.Context) (string, error) { t.Error("fn ran on a resolved key"); return "", nil }
	out, err := once.DoOutcome(t.Context(), keeper.Scope(k.scope).With(once.WithCodec(gobCodec{})), k.key, once.Fingerprint("fp"), ran)
	require.NoError(t, err)
	require.Equal(t, once.Replayed, out.Status)
	require.Equal(t, "charged", out.Value)
	_, err = once.Do(t.Context(), keeper.Scope(k.scope), k.key, once.Fingerprint("fp"), ran)
	require.Error(t, err, "the value is in gob, which the Keeper's default JSON codec does not read")
}

// TestReconcilerWithAnExtremeLease: the check's deadline, three quarters
// of the lease, does not overflow with an extreme lease: the check runs
// with a live context and its verdict is stored.
func TestReconcilerWithAnExtremeLease(t *testing.T) {
	store := memory.New(nil)
	holdKeys(t, store, 1)
	rc, err := reconcile.New(once.New(store), func(ctx context.Context, _ reconcile.HeldKey) (reconcile.Verdict[int], error) {
		if err := ctx.Err(); err != nil {
			return reconcile.Verdict[int]{}, err
		}
		return reconcile.Verdict[int]{Settled: true, Value: 1}, nil
	}, reconcile.Config{Lease: time.Duration(math.MaxInt64 / 2)}) // Lease*3 wraps negative
	require.NoError(t, err)
	rep, err := rc.Pass(t.Context())
	require.NoError(t, err)
	require.Empty(t, rep.Errors)
	require.Equal(t, 1, rep.Resolved)
}

// TestNewReconcilerRejectsALeaseBelowTheMinimum: a Config.Lease
// that is negative or shorter than MinReconcileLease (with which every
// check would time out at once, or every Resolve land after the lease) is
// refused with an *InvalidInputError; 0 means the default.
func TestNewReconcilerRejectsALeaseBelowTheMinimum(t *testing.T) {
	check := func(context.Context, reconcile.HeldKey) (reconcile.Verdict[int], error) {
		return reconcile.Verdict[int]{}, nil
	}
	for _, lease := range []time.Duration{math.MinInt64, -time.Hour, -1, 1, time.Microsecond, time.Millisecond, reconcile.MinLease - 1} {
		_, err := reconcile.New(once.New(memory.New(nil)), check, reconcile.Config{Lease: lease})
		var invalid *once.InvalidInputError
		require.ErrorAs(t, err, &invalid, "lease %v", lease)
		require.ErrorAs(t, err, new(*once.InvalidInputError))
		require.Equal(t, "reconciler_lease", invalid.Field)
		if lease < 0 {
			require.Equal(t, "negative", invalid.Reason)
		} else {
			require.Equal(t, "shorter than 1s", invalid.Reason)
		}
	}
}

// TestNewReconcilerRejectsOtherInvalidConfig: a negative Batch or
// OlderThan (which used to fall back to the default silently) and a Scope
// no record can have are refused with an *InvalidInputError naming the
// field; the zero values mean the defaults, and the largest values are
// accepted.
func TestNewReconcilerRejectsOtherInvalidConfig(t *testing.T) {
	check := func(context.Context, reconcile.HeldKey) (reconcile.Verdict[int], error) {
		return reconcile.Verdict[int]{}, nil
	}
	k := once.New(memory.New(nil))
	for _, c := range []struct {
		cfg   reconcile.Config
		field string
	}{
		{reconcile.Config{Batch: -1}, "reconciler_batch"},
		{reconcile.Config{Batch: math.MinInt}, "reconciler_batch"},
		{reconcile.Config{OlderThan: -time.Nanosecond}, "reconciler_older_than"},
		{reconcile.Config{OlderThan: math.MinInt64}, "reconciler_older_than"},
		{reconcile.Config{Scope: strings.Repeat("s", 256)}, "scope"},
		{reconcile.Config{Scope: "bad\x00scope"}, "scope"},
	} {
		_, err := reconcile.New(k, check, c.cfg)
		var invalid *once.InvalidInputError
		require.ErrorAs(t, err, &invalid, "%+v", c.cfg)
		require.Equal(t, c.field, invalid.Field, "%+v", c.cfg)
	}
	for _, cfg := range []reconcile.Config{{}, {Batch: math.MaxInt, OlderThan: math.MaxInt64, Scope: "orders"}} {
		_, err := reconcile.New(k, check, cfg)
		require.NoError(t, err, "%+v", cfg)
	}
}

// TestReconcilerLeaseExtremes: with the default lease (0), the minimum and
// math.MaxInt64, on every store, the check runs with a live context whose
// deadline is three quarters of the lease away (never overflowed), a key
// left held is unleased (the next pass asks again), and the verdict is
// stored.
func TestReconcilerLeaseExtremes(t *testing.T) {
	for name, newStore := range testservers.ListerStores() {
		t.Run(name, func(t *testing.T) {
			for _, lease := range []time.Duration{0, reconcile.MinLease, math.MaxInt64} {
				t.Run(fmt.Sprint(lease), func(t *testing.T) {
					store := newStore(t)
					keys := holdKeys(t, store, 1)
					want := lease
					if want == 0 {
						want = reconcile.DefaultLease
					}
					want = min(want, reconcile.MaxLease)
					var calls int
					rc, err := reconcile.New(once.New(store), func(ctx context.Context, _ reconcile.HeldKey) (reconcile.Verdict[int], error) {
						if err := ctx.Err(); err != nil {
							return reconcile.Verdict[int]{}, err
						}
						deadline, ok := ctx.Deadline()
						require.True(t, ok)
						left := time.Until(deadline)
						require.LessOrEqual(t, left, want-want/4)
						require.Greater(t, left, want/2, "three quarters of the lease, less the time taken so far")
						calls++
						return reconcile.Verdict[int]{Settled: calls > 1, Value: 7}, nil // unsure at first
					}, reconcile.Config{Lease: lease})
					require.NoError(t, err)
					rep, err := rc.Pass(t.Context())
					require.NoError(t, err)
					require.Empty(t, rep.Errors)
					require.Equal(t, 1, rep.LeftHeld)
					require.Eventually(t, func() bool { // Redis rounds the unlease up to 1 ms
						rep, err := rc.Pass(t.Context())
						require.NoError(t, err)
						require.Empty(t, rep.Errors)
						return rep.Resolved == 1
					}, 5*time.Second, 5*time.Millisecond)
					v, err := once.Do(t.Context(), once.New(store).Scope(keys[0].scope), keys[0].key, once.Fingerprint("fp"), func(context.Context) (int, error) {
						t.Error("fn ran on a resolved key")
						return 0, nil
					})
					require.NoError(t, err)
					require.Equal(t, 7, v)
				})
			}
		})
	}
}

// TestAnInvalidKeeperStoresNoVerdict: a Keeper whose options Do refuses
// (a negative retention: on Redis, 1 ms, after which the key would be
// claimable again and fn run twice) stores no verdict either: the key is
// counted Failed with the error Do returns, and stays held.
func TestAnInvalidKeeperStoresNoVerdict(t *testing.T) {
	store := memory.New(nil)
	holdKeys(t, store, 1)
	k := once.New(store, once.WithRetention(-time.Hour))
	_, doErr := once.Do(t.Context(), k.Scope("s"), "k", nil, func(context.Context) (int, error) {
		t.Error("fn ran with an invalid policy")
		return 0, nil
	})
	var doInvalid *once.InvalidInputError
	require.ErrorAs(t, doErr, &doInvalid)

	rc, err := reconcile.New(k, func(context.Context, reconcile.HeldKey) (reconcile.Verdict[int], error) {
		return reconcile.Verdict[int]{Settled: true, Value: 1}, nil
	}, reconcile.Config{})
	require.NoError(t, err)
	rep, err := rc.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 1, rep.Failed)
	require.Zero(t, rep.Resolved)
	require.Len(t, rep.Errors, 1)
	var invalid *once.InvalidInputError
	require.ErrorAs(t, rep.Errors[0], &invalid)
	require.Equal(t, *doInvalid, *invalid, "the error Do returns")
	counts, err := store.Count(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(1), counts.Held)
}
