package localcache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/backends/memory"
)

// TestStrictModel is stricter than TestModel: one store (memory, which
// reports ExpiresIn) shared by a Keeper over the cache ("this
// process") and one without ("another process"), both on one fake clock.
// Before each call of the cached Keeper the model reads the record from
// the store (Admin.Get) and derives what the store would answer; the
// cached answer must be that, except within TTL after a Delete of a
// completed record made elsewhere than through the cache (the only
// staleness the docs admit on a store that reports the time left). Other
// ops: calls by the other process (values, final, retryable, held errors,
// per-call retentions), Resolve, Delete (through the cache, or
// elsewhere), clock jumps around lease, TTL and retention.
func TestStrictModel(t *testing.T) {
	seeds, ops := 100, 300
	if testing.Short() {
		seeds = 40
	}
	hits, replays := 0, 0
	for seed := range seeds {
		h, r := runStrictCacheModel(t, uint64(seed), ops)
		hits += h
		replays += r
	}
	t.Logf("%d answers from the cache, %d replays checked", hits, replays)
	require.Positive(t, hits)
}

func runStrictCacheModel(t *testing.T, seed uint64, ops int) (hits, replays int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 99))
	clock := newFakeClock()
	mem := memory.New(&memory.Config{Now: clock.Now})
	const lease = 30 * time.Second
	ttl := []time.Duration{time.Second, 30 * time.Second, 10 * time.Minute, 48 * time.Hour}[rng.IntN(4)]
	retentions := []time.Duration{time.Second, 20 * time.Second, time.Minute, 24 * time.Hour}
	cfg := localcache.Config{MaxEntries: 1 + rng.IntN(4), TTL: ttl, MaxBytes: []int{0, 400, 4096}[rng.IntN(3)], Now: clock.Now}
	opts := []once.Option{once.WithLease(lease), once.WithHoldFor([]time.Duration{0, time.Second, time.Hour}[rng.IntN(3)])}
	cs := &countingStore{Store: mem}
	store := cached(t, cs, cfg)
	this := once.New(store, opts...).Scope("m")
	other := once.New(mem, opts...).Scope("m")
	keys := []string{"k0", "k1", "k2"}
	fps := []once.Fingerprint{nil, once.Fingerprint("a"), once.Fingerprint("b")}
	staleUntil := map[string]time.Time{}
	for i := range ops {
		key := keys[rng.IntN(len(keys))]
		f := fps[rng.IntN(len(fps))]
		ret := retentions[rng.IntN(len(retentions))]
		kind := rng.IntN(6)
		step := fmt.Sprintf("seed %d op %d key %s fp %q ttl %v ret %v kind %d", seed, i, key, f, ttl, ret, kind)
		now := clock.Now()
		switch r := rng.IntN(20); {
		case r < 9: // this process
			rec, err := mem.Get(ctx, "m", key)
			found := rec.State != 0
			require.NoError(t, err)
			before := cs.claims.Load()
			out, err := once.DoOutcome(ctx, this.With(once.WithRetention(ret)), key, f, modelFn(kind, i))
			if cs.claims.Load() == before {
				hits++
			}
			if now.Before(staleUntil[key]) {
				continue // the documented window after a Delete
			}
			switch {
			case found && !backends.FingerprintMatches(rec.Fingerprint, f):
				require.ErrorIs(t, err, once.ErrKeyReused, "%s: store holds %v", step, rec.State)
			case found && rec.State == backends.StateCompleted:
				require.Equal(t, once.Replayed, out.Status, "%s: store holds a completed record: %+v %v", step, out, err)
				replays++
				truth, terr := once.DoOutcome(ctx, other, key, f, modelFn(kind, i)) // a replay from the store: no write
				require.Equal(t, fmt.Sprint(truth.Value, terr), fmt.Sprint(out.Value, err), "%s: the cache replayed another outcome than the store's", step)
			case found && (rec.LeaseRemaining > 0 || rec.State == backends.StateHeld && rec.Held.Remaining > 0):
				require.ErrorIs(t, err, once.ErrInProgress, "%s: store holds a live %v record: %+v", step, rec.State, out)
			default: // absent or claimable: fn runs
				require.NotEqual(t, once.Replayed, out.Status, "%s: the store would run fn (found %v %v), the cache replayed: %+v %v", step, found, rec.State, out, err)
				require.False(t, errors.Is(err, once.ErrKeyReused), "%s: the store would run fn, the cache said ErrKeyReused", step)
			}
		case r < 13: // another process
			_, _ = once.DoOutcome(ctx, other.With(once.WithRetention(ret)), key, f, modelFn(kind, i))
		case r < 15:
			_ = once.Resolve(ctx, other.With(once.WithRetention(ret)), key, f, i, nil)
		case r < 17:
			rec, err := mem.Get(ctx, "m", key)
			found := rec.State != 0
			require.NoError(t, err)
			if rng.IntN(2) == 0 { // through the cache, which sees it
				_, err = store.(backends.Admin).Delete(ctx, "m", key)
				require.NoError(t, err)
				break
			}
			_, err = mem.Delete(ctx, "m", key) // elsewhere
			require.NoError(t, err)
			if found && rec.State == backends.StateCompleted {
				staleUntil[key] = now.Add(ttl)
			}
		default:
			clock.Advance([]time.Duration{time.Millisecond, time.Second, lease, ttl, time.Minute, 24 * time.Hour}[rng.IntN(6)])
		}
	}
	return hits, replays
}
