package once_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// The allocation budgets of Do's four paths on the memory store, the core's
// own cost (the figures bench/README.md's profiling section explains).
// A change that adds an allocation to a hot path fails here and must
// either be reworked or raise the budget with its reason. Allocation
// counts are exact and repeatable, unlike timings; the race detector adds
// its own, so the budgets are checked without it.
const (
	// The key's string is made before the measurement. 18 since steps:
	// fn's context carries the claim (for Step), so the claim escapes to
	// the heap where it was on the stack. 16 since a write's context
	// detaches from the call's itself (no context.WithoutCancel per claim)
	// and the first write's context lives in the claim. 14 since fn's
	// cancel context is made on fn's first look at its context (chargeFn
	// never looks). 7 since the first caller of a value whose JSON round
	// trip is exact gets it without a decode (chargeFn's payment: 7
	// allocations). The store gets its own copy of the stored form, not
	// the encoder's pooled buffer: a store or driver that kept a slice of
	// it would otherwise see another call's outcome written over it.
	allocsFirstExecution = 7
	allocsReplay         = 9 // token 1, the store's copy of fingerprint and outcome 1, the JSON decode 7
	allocsInProgress     = 3 // token 1, the store's copy of the fingerprint 1, the *InProgressError 1
	allocsMismatch       = 2 // token 1, the store's copy of fingerprint and outcome 1
)

func TestAllocationBudgets(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	ctx := context.Background()
	store := memory.New(nil)
	scope := once.New(store).Scope("allocs")
	if _, err := once.Do(ctx, scope, "hot", benchFP, chargeFn); err != nil {
		t.Fatal(err)
	}
	r, err := store.Claim(ctx, backends.ClaimParams{Scope: "allocs", Key: "pending", Fingerprint: benchFP, Owner: "someone", Lease: time.Hour, Retention: time.Hour})
	if err != nil || !r.Claimed {
		t.Fatalf("claim the pending key: %v %+v", err, r)
	}
	keys := make([]string, 0, 1000)
	for i := range cap(keys) {
		keys = append(keys, "k"+strconv.Itoa(i))
	}
	var next int
	other := once.Fingerprint("another payload's fingerprint...")
	var ip *once.InProgressError
	cases := []struct {
		name   string
		budget int
		run    func() error
	}{
		{"first execution", allocsFirstExecution, func() error {
			out, err := once.DoOutcome(ctx, scope, keys[next], benchFP, chargeFn)
			next++
			if err == nil && out.Status != once.Recorded {
				err = errors.New("not a first execution")
			}
			return err
		}},
		{"replay", allocsReplay, func() error {
			out, err := once.DoOutcome(ctx, scope, "hot", benchFP, chargeFn)
			if err == nil && out.Status != once.Replayed {
				err = errors.New("not a replay")
			}
			return err
		}},
		{"in progress", allocsInProgress, func() error {
			_, err := once.Do(ctx, scope, "pending", benchFP, chargeFn)
			if !errors.As(err, &ip) {
				return errors.New("not in progress: " + errString(err))
			}
			return nil
		}},
		{"mismatch", allocsMismatch, func() error {
			_, err := once.Do(ctx, scope, "hot", other, chargeFn)
			if !errors.Is(err, once.ErrKeyReused) {
				return errors.New("not a mismatch: " + errString(err))
			}
			return nil
		}},
	}
	for _, c := range cases {
		var failed error
		got := testing.AllocsPerRun(200, func() {
			if err := c.run(); err != nil && failed == nil {
				failed = err
			}
		})
		if failed != nil {
			t.Fatalf("%s: %v", c.name, failed)
		}
		t.Logf("%s: %.1f allocations (budget %d)", c.name, got, c.budget)
		if got > float64(c.budget) {
			t.Errorf("%s allocates %.1f times per Do, over its budget of %d", c.name, got, c.budget)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
