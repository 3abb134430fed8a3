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
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/reconcile"
)

// TestReconcilerModel interleaves, on a memory store with a fake
// clock, two Reconcilers (random Batch and Lease, up to math.MaxInt64),
// calls that hold, complete, or take keys over, operator deletes and clock
// jumps; Check functions settle, leave held, fail or panic, and run other
// operations (the other Reconciler's Pass included) while they "ask".
// Invariants: a Pass examines at most Batch keys and never fails on memory;
// a completed record is never changed by a Reconciler; in the end,
// Reconcilers with an always-settling lookup resolve every held key (none
// is lost or stranded by a lease).
func TestReconcilerModel(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		runReconcilerModel(t, uint64(seed))
	}
}

func runReconcilerModel(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 7))
	clock := newFakeClock()
	mem := memory.New(&memory.Config{Now: clock.Now})
	hold := []time.Duration{time.Second, once.HoldUntilResolved}[rng.IntN(2)]
	keeper := once.New(mem, once.WithLease(30*time.Second), once.WithHoldFor(hold), once.WithRetention(time.Hour))
	sc := keeper.Scope("s")
	keys := []string{"a", "b", "c", "d", "e", "f"}
	leases := []time.Duration{time.Second, time.Minute, math.MaxInt64}
	depth := 0
	var rcs [2]*reconcile.Job[int]
	var batches [2]int
	var op func(i int)
	check := func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[int], error) {
		if depth < 2 && rng.IntN(2) == 0 {
			depth++
			for range 1 + rng.IntN(3) {
				op(-1)
			}
			depth--
		}
		switch rng.IntN(5) {
		case 0:
			return reconcile.Verdict[int]{}, nil
		case 1:
			return reconcile.Verdict[int]{}, errors.New("lookup failed")
		case 2:
			panic("lookup panics")
		}
		return reconcile.Verdict[int]{Settled: true, Value: 7}, nil
	}
	for i := range rcs {
		batches[i] = 1 + rng.IntN(4)
		rc, err := reconcile.New(keeper, check, reconcile.Config{Batch: batches[i], Lease: leases[rng.IntN(len(leases))]})
		require.NoError(t, err)
		reconcile.WithClock(rc, clock.Now)
		rcs[i] = rc
	}
	busy := [2]bool{}
	resets := 0 // deletes and jumps past the retention
	op = func(i int) {
		key := keys[rng.IntN(len(keys))]
		step := fmt.Sprintf("seed %d op %d key %s depth %d", seed, i, key, depth)
		switch r := rng.IntN(10); {
		case r < 3:
			_, _ = once.Do(ctx, sc, key, once.Fingerprint("fp"), func(context.Context) (int, error) {
				if rng.IntN(3) == 0 {
					return 1, nil
				}
				return 0, once.Hold(errors.New("timeout"))
			})
		case r < 4:
			_, _ = mem.Delete(ctx, "s", key)
			resets++
		case r < 6:
			d := []time.Duration{time.Millisecond, time.Second, time.Minute, 2 * time.Hour}[rng.IntN(4)]
			clock.Advance(d)
			if d > time.Minute {
				resets++
			}
		default:
			w := rng.IntN(2)
			if busy[w] {
				return // a Reconciler is not safe for concurrent (or nested) Pass calls
			}
			before := map[string]backends.Record{}
			for _, k := range keys {
				if rec, _ := mem.Get(ctx, "s", k); rec.State == backends.StateCompleted {
					before[k] = rec
				}
			}
			resetsBefore := resets
			busy[w] = true
			rep, err := rcs[w].Pass(ctx)
			busy[w] = false
			require.NoError(t, err, step)
			require.LessOrEqual(t, rep.Examined, batches[w], step)
			if resets == resetsBefore {
				for k, rec := range before {
					if now, _ := mem.Get(ctx, "s", k); now.State == backends.StateCompleted {
						require.Equal(t, rec.Outcome, now.Outcome, "%s: a Reconciler changed the completed record of %s", step, k)
					}
				}
			}
		}
	}
	for i := range 200 {
		op(i)
	}
	// The end: lookups settle every key.
	final := func(ctx context.Context, k reconcile.HeldKey) (reconcile.Verdict[int], error) {
		return reconcile.Verdict[int]{Settled: true, Value: 9}, nil
	}
	for i := range rcs {
		rc, err := reconcile.New(keeper, final, reconcile.Config{Batch: batches[i]})
		require.NoError(t, err)
		rcs[i] = rc
	}
	clock.Advance(time.Millisecond) // unleased keys carry a 1 ns lease
	for range 20 {
		for _, rc := range rcs {
			_, err := rc.Pass(ctx)
			require.NoError(t, err)
		}
	}
	counts, err := mem.Count(ctx)
	require.NoError(t, err)
	if counts.Held > 0 {
		for _, k := range keys {
			if rec, _ := mem.Get(ctx, "s", k); rec.State == backends.StateHeld {
				t.Logf("seed %d: %s held, reconciler lease left %v, hold left %v", seed, k, rec.LeaseRemaining, rec.Held.Remaining)
			}
		}
	}
	require.Zero(t, counts.Held, "seed %d: held keys left after the final passes", seed)
}
