package once_test

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

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/internal/testservers"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// reconcilableStores are the stores that implement backends.Lister, over
// the real servers.
func reconcilableStores() map[string]func(testing.TB) backends.Store {
	return map[string]func(testing.TB) backends.Store{
		"memory":        func(testing.TB) backends.Store { return memory.New(nil) },
		"postgres":      func(tb testing.TB) backends.Store { s, _ := testservers.PostgresStore(tb); return s },
		"redis":         func(tb testing.TB) backends.Store { return testservers.RedisStore(tb) },
		"redis-cluster": redisClusterStore,
	}
}

func redisClusterStore(tb testing.TB) backends.Store {
	tb.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: serverenv.RedisClusterAddrs()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		testservers.Unavailable(tb, "Redis Cluster", err)
	}
	prefix := "once-t-" + testservers.Suffix() + ":"
	s, err := redisstore.New(ctx, c, &redisstore.Config{KeyPrefix: prefix, EvictionPolicyCheck: redisstore.EvictionIgnore})
	require.NoError(tb, err)
	tb.Cleanup(func() {
		ctx := context.Background()
		_ = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			iter := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				_ = n.Del(ctx, iter.Val()).Err()
			}
			return iter.Err()
		})
		_ = c.Close()
	})
	return s
}

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
	for name, newStore := range reconcilableStores() {
		t.Run(name, func(t *testing.T) {
			store := newStore(t)
			keys := holdKeys(t, store, n)
			keeper := once.New(store)
			ctx := t.Context()

			var asked sync.Map // scope/key -> *atomic.Int32
			var unsure atomic.Int32
			check := func(ctx context.Context, k once.HeldKey) (once.Verdict[string], error) {
				c, _ := asked.LoadOrStore(k.Scope+"/"+k.Key, new(atomic.Int32))
				calls := c.(*atomic.Int32).Add(1)
				require.Equal(t, "timeout", k.Code)
				switch {
				case k.Key[len(k.Key)-1] == '7' && calls == 1:
					unsure.Add(1)
					return once.Verdict[string]{}, nil // the provider does not know yet
				case k.Key[len(k.Key)-1] == '3' && calls == 1:
					return once.Verdict[string]{}, errors.New("provider unreachable")
				case k.Key[len(k.Key)-1] == '9':
					return once.Verdict[string]{Settled: true, Err: once.Final(errors.New("card declined"))}, nil
				}
				return once.Verdict[string]{Settled: true, Value: "charge-" + k.Key}, nil
			}

			var resolved atomic.Int64
			var wg sync.WaitGroup
			for range 2 {
				rc, err := once.NewReconciler(keeper, check, once.ReconcilerConfig{Batch: 64, Lease: 10 * time.Second})
				require.NoError(t, err)
				wg.Go(func() {
					idle := 0
					for idle < 3 {
						rep, err := rc.Pass(ctx)
						require.NoError(t, err)
						resolved.Add(int64(rep.Resolved))
						if rep.Done && rep.Examined == 0 {
							idle++
						}
					}
				})
			}
			// The original owners wake up late and try to complete.
			var late atomic.Int32
			wg.Go(func() {
				for _, k := range keys {
					ok, err := store.Complete(ctx, backends.CompleteParams{Scope: k.scope, Key: k.key, Owner: k.owner, Outcome: []byte("late"), Retention: time.Hour})
					require.NoError(t, err)
					if ok {
						late.Add(1)
					}
				}
			})
			wg.Wait()

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
	_, err := once.NewReconciler(once.New(plainStore{memory.New(nil)}), func(context.Context, once.HeldKey) (once.Verdict[int], error) {
		return once.Verdict[int]{}, nil
	}, once.ReconcilerConfig{})
	var invalid *once.InvalidInputError
	require.ErrorAs(t, err, &invalid)
	require.Contains(t, invalid.Reason, "backends.Lister")
}

// plainStore hides every optional interface of its store.
type plainStore struct{ backends.Store }

func TestReconcilerBoundsWorkPerPass(t *testing.T) {
	store := memory.New(nil)
	holdKeys(t, store, 25)
	rc, err := once.NewReconciler(once.New(store), func(context.Context, once.HeldKey) (once.Verdict[int], error) {
		return once.Verdict[int]{}, nil // never settled
	}, once.ReconcilerConfig{Batch: 10})
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
	rc, err := once.NewReconciler(once.New(store), func(_ context.Context, k once.HeldKey) (once.Verdict[int], error) {
		if k.Key == "order-0001" {
			panic("boom")
		}
		return once.Verdict[int]{Settled: true, Value: 1}, nil
	}, once.ReconcilerConfig{})
	require.NoError(t, err)
	rep, err := rc.Pass(t.Context())
	require.NoError(t, err)
	require.Equal(t, 2, rep.Resolved)
	require.Equal(t, 1, rep.Failed)
	require.ErrorContains(t, rep.Errors[0], "panicked: boom")
}

// TestReconcilerEncodesWithItsCodec: a settled verdict's value is stored
// with ReconcilerConfig.Codec, not the Keeper's codec, so callers that
// decode with that codec replay it.
func TestReconcilerEncodesWithItsCodec(t *testing.T) {
	store := memory.New(nil)
	keys := holdKeys(t, store, 1)
	keeper := once.New(store) // JSONCodec
	rc, err := once.NewReconciler(keeper, func(context.Context, once.HeldKey) (once.Verdict[string], error) {
		return once.Verdict[string]{Settled: true, Value: "charged"}, nil
	}, once.ReconcilerConfig{Codec: gobCodec{}})
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
	require.Error(t, err, "the value is in gob, which the Keeper's JSONCodec does not read")
}

// TestNewReconcilerRejectsAnInvalidKeeper: a Keeper whose options Do would
// refuse (here a negative retention) makes no Reconciler, so no verdict is
// stored with that retention (on Redis, 1 ms: the key would soon be
// claimable again and fn run twice).
func TestNewReconcilerRejectsAnInvalidKeeper(t *testing.T) {
	_, err := once.NewReconciler(once.New(memory.New(nil), once.WithRetention(-time.Hour)), func(context.Context, once.HeldKey) (once.Verdict[int], error) {
		return once.Verdict[int]{}, nil
	}, once.ReconcilerConfig{})
	var invalid *once.InvalidInputError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "retention", invalid.Field)
}

// TestReconcilerWithAnExtremeLease: the check's deadline, three quarters
// of the lease, does not overflow with an extreme lease: the check runs
// with a live context and its verdict is stored.
func TestReconcilerWithAnExtremeLease(t *testing.T) {
	store := memory.New(nil)
	holdKeys(t, store, 1)
	rc, err := once.NewReconciler(once.New(store), func(ctx context.Context, _ once.HeldKey) (once.Verdict[int], error) {
		if err := ctx.Err(); err != nil {
			return once.Verdict[int]{}, err
		}
		return once.Verdict[int]{Settled: true, Value: 1}, nil
	}, once.ReconcilerConfig{Lease: time.Duration(math.MaxInt64 / 2)}) // Lease*3 wraps negative
	require.NoError(t, err)
	rep, err := rc.Pass(t.Context())
	require.NoError(t, err)
	require.Empty(t, rep.Errors)
	require.Equal(t, 1, rep.Resolved)
}

// TestNewReconcilerRejectsALeaseBelowTheMinimum: a ReconcilerConfig.Lease
// that is negative or shorter than MinReconcileLease (with which every
// check would time out at once, or every Resolve land after the lease) is
// refused with an *InvalidInputError; 0 means the default.
func TestNewReconcilerRejectsALeaseBelowTheMinimum(t *testing.T) {
	check := func(context.Context, once.HeldKey) (once.Verdict[int], error) { return once.Verdict[int]{}, nil }
	for _, lease := range []time.Duration{math.MinInt64, -time.Hour, -1, 1, time.Microsecond, time.Millisecond, once.MinReconcileLease - 1} {
		_, err := once.NewReconciler(once.New(memory.New(nil)), check, once.ReconcilerConfig{Lease: lease})
		var invalid *once.InvalidInputError
		require.ErrorAs(t, err, &invalid, "lease %v", lease)
		require.ErrorIs(t, err, once.ErrInvalidInput)
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
	check := func(context.Context, once.HeldKey) (once.Verdict[int], error) { return once.Verdict[int]{}, nil }
	k := once.New(memory.New(nil))
	for _, c := range []struct {
		cfg   once.ReconcilerConfig
		field string
	}{
		{once.ReconcilerConfig{Batch: -1}, "reconciler_batch"},
		{once.ReconcilerConfig{Batch: math.MinInt}, "reconciler_batch"},
		{once.ReconcilerConfig{OlderThan: -time.Nanosecond}, "reconciler_older_than"},
		{once.ReconcilerConfig{OlderThan: math.MinInt64}, "reconciler_older_than"},
		{once.ReconcilerConfig{Scope: strings.Repeat("s", 256)}, "scope"},
		{once.ReconcilerConfig{Scope: "bad\x00scope"}, "scope"},
	} {
		_, err := once.NewReconciler(k, check, c.cfg)
		var invalid *once.InvalidInputError
		require.ErrorAs(t, err, &invalid, "%+v", c.cfg)
		require.Equal(t, c.field, invalid.Field, "%+v", c.cfg)
	}
	for _, cfg := range []once.ReconcilerConfig{{}, {Batch: math.MaxInt, OlderThan: math.MaxInt64, Scope: "orders"}} {
		_, err := once.NewReconciler(k, check, cfg)
		require.NoError(t, err, "%+v", cfg)
	}
}

// TestReconcilerLeaseExtremes: with the default lease (0), the minimum and
// math.MaxInt64, on every store, the check runs with a live context whose
// deadline is three quarters of the lease away (never overflowed), a key
// left held is unleased (the next pass asks again), and the verdict is
// stored.
func TestReconcilerLeaseExtremes(t *testing.T) {
	for name, newStore := range reconcilableStores() {
		t.Run(name, func(t *testing.T) {
			for _, lease := range []time.Duration{0, once.MinReconcileLease, math.MaxInt64} {
				t.Run(fmt.Sprint(lease), func(t *testing.T) {
					store := newStore(t)
					keys := holdKeys(t, store, 1)
					want := lease
					if want == 0 {
						want = once.DefaultReconcileLease
					}
					want = min(want, once.MaxReconcileLease)
					var calls int
					rc, err := once.NewReconciler(once.New(store), func(ctx context.Context, _ once.HeldKey) (once.Verdict[int], error) {
						if err := ctx.Err(); err != nil {
							return once.Verdict[int]{}, err
						}
						deadline, ok := ctx.Deadline()
						require.True(t, ok)
						left := time.Until(deadline)
						require.LessOrEqual(t, left, want-want/4)
						require.Greater(t, left, want/2, "three quarters of the lease, less the time taken so far")
						calls++
						return once.Verdict[int]{Settled: calls > 1, Value: 7}, nil // unsure at first
					}, once.ReconcilerConfig{Lease: lease})
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

// TestNewReconcilerRejectsWhatDoRejects: a Keeper whose every Do returns
// an *InvalidInputError (a negative retention) makes no Reconciler
// either, with the same error.
func TestNewReconcilerRejectsWhatDoRejects(t *testing.T) {
	check := func(context.Context, once.HeldKey) (once.Verdict[int], error) { return once.Verdict[int]{}, nil }
	for name, opt := range map[string]once.Option{
		"retention": once.WithRetention(-time.Hour),
	} {
		t.Run(name, func(t *testing.T) {
			k := once.New(memory.New(nil), opt)
			_, doErr := once.Do(t.Context(), k.Scope("s"), "k", nil, func(context.Context) (int, error) {
				t.Error("fn ran with an invalid policy")
				return 0, nil
			})
			var doInvalid *once.InvalidInputError
			require.ErrorAs(t, doErr, &doInvalid)

			_, err := once.NewReconciler(k, check, once.ReconcilerConfig{})
			var invalid *once.InvalidInputError
			require.ErrorAs(t, err, &invalid)
			require.Equal(t, *doInvalid, *invalid, "the error Do returns")
		})
	}
}
