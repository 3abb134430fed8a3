package localcache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/backends/memory"
)

// cacheWorld is one Keeper over its own memory store; the model runs the
// same operations in a world with a local cache and in one without.
type cacheWorld struct {
	mem   *memory.Store
	scope once.Scope
}

// cacheModelKey is what the model knows about a key of the uncached world,
// to tell when the cached world may answer from a record the store no
// longer holds (the documented staleness window).
type cacheModelKey struct {
	name      string
	gen       int
	completed bool
	expiresAt time.Time
	// staleUntil ends the window opened by a delete, or by an expiry
	// followed by a new completion.
	staleUntil time.Time
}

// completedAt records a completion at now of a record that lives retention.
func (mk *cacheModelKey) completedAt(now time.Time, retention, ttl time.Duration) {
	if !mk.expiresAt.IsZero() && !now.Before(mk.expiresAt) {
		mk.staleUntil = latestTime(mk.staleUntil, mk.expiresAt.Add(ttl))
	}
	mk.completed, mk.expiresAt = true, now.Add(retention)
}

func latestTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

type cacheAnswer struct {
	out once.Outcome[int]
	err string
}

// TestModel runs random sequences of calls, final, retryable and
// held errors, resolves, deletes and clock jumps against a cached and an
// uncached Keeper, each on its own store with one fake clock. Every answer
// must be identical, except within TTL after the key's record was deleted
// or expired in the store, where the cached world may answer from the old
// record (its outcome, or ErrKeyReused to another fingerprint); such a key is then retired, since the two stores differ.
func TestModel(t *testing.T) {
	seeds, ops := 200, 300
	if testing.Short() {
		seeds = 30
	}
	stale, hits := 0, 0
	for seed := range seeds {
		s, h := runCacheModel(t, uint64(seed), ops)
		stale += s
		hits += h
	}
	t.Logf("%d stale answers within the window, %d answers without a store call", stale, hits)
	require.Positive(t, stale, "the sequences reach the staleness window")
	require.Positive(t, hits, "the sequences hit the cache")
}

func runCacheModel(t *testing.T, seed uint64, ops int) (stale, hits int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 14))
	clock := newFakeClock()
	const retention, lease = 10 * time.Minute, 30 * time.Second
	ttl := []time.Duration{time.Second, time.Minute, 10 * time.Minute, 2 * time.Hour}[rng.IntN(4)]
	cfg := localcache.Config{MaxEntries: 1 + rng.IntN(3), TTL: ttl, Now: clock.Now}
	opts := []once.Option{once.WithRetention(retention), once.WithLease(lease)}

	memA := memory.New(&memory.Config{Now: clock.Now})
	countA := &countingStore{Store: memA}
	cachedA := cached(t, countA, cfg)
	cachedW := cacheWorld{mem: memA, scope: once.New(cachedA, opts...).Scope("m")}
	memB := memory.New(&memory.Config{Now: clock.Now})
	plain := cacheWorld{mem: memB, scope: once.New(memB, opts...).Scope("m")}

	keys := make([]*cacheModelKey, 4)
	for i := range keys {
		keys[i] = &cacheModelKey{name: "k" + strconv.Itoa(i)}
	}
	fps := []once.Fingerprint{nil, once.Fingerprint("a"), once.Fingerprint("b")}
	for i := range ops {
		mk := keys[rng.IntN(len(keys))]
		key := mk.name + "." + strconv.Itoa(mk.gen)
		f := fps[rng.IntN(len(fps))]
		shortRetention := rng.IntN(4) == 0
		now := clock.Now()
		inWindow := func() bool {
			return now.Before(mk.staleUntil) ||
				!mk.expiresAt.IsZero() && !now.Before(mk.expiresAt) && now.Before(mk.expiresAt.Add(ttl))
		}
		step := fmt.Sprintf("seed %d op %d key %s ttl %v", seed, i, key, ttl)
		switch r := rng.IntN(20); {
		case r < 12:
			kind := rng.IntN(6)
			run := func(w cacheWorld) cacheAnswer {
				scope := w.scope
				if shortRetention {
					scope = scope.With(once.WithRetention(time.Minute))
				}
				out, err := once.DoOutcome(ctx, scope, key, f, modelFn(kind, i))
				a := cacheAnswer{out: out}
				if err != nil {
					a.err = err.Error()
				}
				return a
			}
			claimsBefore := countA.claims.Load()
			a, b := run(cachedW), run(plain)
			if countA.claims.Load() == claimsBefore {
				hits++
			}
			if a != b {
				require.True(t, inWindow(), "%s: answers differ outside the window: cached %+v, plain %+v", step, a, b)
				require.True(t, a.out.Status == once.Replayed || a.err == once.ErrKeyReused.Error(), "%s: a stale answer is the old record's: %+v", step, a)
				stale++
				*mk = cacheModelKey{name: mk.name, gen: mk.gen + 1}
				continue
			}
			if b.out.Status == once.Recorded {
				if shortRetention {
					mk.completedAt(now, time.Minute, ttl)
				} else {
					mk.completedAt(now, retention, ttl)
				}
			}
		case r < 14:
			v := rng.IntN(1000)
			ea := once.Resolve(ctx, cachedW.scope, key, f, v, nil)
			eb := once.Resolve(ctx, plain.scope, key, f, v, nil)
			require.Equal(t, fmt.Sprint(eb), fmt.Sprint(ea), step)
			if eb == nil {
				mk.completedAt(now, retention, ttl)
			}
		case r < 16:
			da, err := cachedW.mem.Delete(ctx, "m", key)
			require.NoError(t, err)
			db, err := plain.mem.Delete(ctx, "m", key)
			require.NoError(t, err)
			require.Equal(t, db, da, step)
			if db {
				if mk.completed {
					mk.staleUntil = latestTime(mk.staleUntil, now.Add(ttl))
				}
				mk.completed, mk.expiresAt = false, time.Time{}
			}
		default:
			clock.Advance([]time.Duration{time.Second, lease, 2 * time.Minute, retention}[rng.IntN(4)])
		}
	}
	entries, _ := localcache.Stats(cachedA)
	require.LessOrEqual(t, entries, 3)
	return stale, hits
}

var errModelRetry = errors.New("retry me")

// modelFn returns fn's behaviour number kind, with a value unique to op i.
func modelFn(kind, i int) func(context.Context) (int, error) {
	return func(context.Context) (int, error) {
		switch kind {
		case 0:
			return i, once.Final(fmt.Errorf("final %d", i))
		case 1:
			return i, errModelRetry
		case 2:
			return i, once.Hold(fmt.Errorf("held %d", i))
		default:
			return i, nil
		}
	}
}
