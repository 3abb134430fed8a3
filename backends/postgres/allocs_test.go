package postgres

import (
	"context"
	"strconv"
	"testing"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/backendtest"
)

// allocsFirstExecution is the allocation budget of one first execution of
// once.Do over a Store with its defaults (the insert first, then
// complete.sql), keys made beforehand: the core's, the Store's and pgx's
// together. A change that adds an allocation to that path fails
// TestAllocationBudgets and must either be reworked or raise the budget
// with its reason. The raw driver's first execution (BenchmarkRawBaseline)
// is measured beside it and logged, for comparison. 21 since the first
// caller of a value whose JSON round trip is exact (allocCharge's) gets it
// without a decode.
const allocsFirstExecution = 21

type allocPayment struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
	Amount  int    `json:"amount"`
}

func allocCharge(context.Context) (allocPayment, error) {
	return allocPayment{OrderID: "9b1e4d3a", Status: "paid", Amount: 4200}, nil
}

var allocFP = once.Fingerprint("0123456789abcdef0123456789abcdef")

// firstExecutions returns a func making one first execution of once.Do
// per call over a Store on a fresh pool, each on a key made beforehand
// (at most n calls).
func firstExecutions(tb testing.TB, n int) func() error {
	s := newStore(tb, newPool(tb, nil))
	scope := once.New(s).Scope(backendtest.Scope(tb))
	ctx := context.Background()
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	next := 0
	return func() error {
		out, err := once.DoOutcome(ctx, scope, keys[next], allocFP, allocCharge)
		next++
		if err == nil && out.Status != once.Recorded {
			tb.Fatalf("not a first execution: %+v", out)
		}
		return err
	}
}

// rawFirstExecutions is firstExecutions for the raw driver's statements
// (BenchmarkRawBaseline): INSERT … ON CONFLICT DO NOTHING RETURNING, then
// UPDATE.
func rawFirstExecutions(tb testing.TB, n int) func() error {
	pool := newPool(tb, nil)
	ctx := context.Background()
	_, insert, complete, _ := newSeedTable(tb, pool)
	user := backendtest.Scope(tb)
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	next := 0
	return func() error {
		key := keys[next]
		next++
		var k string
		if err := pool.QueryRow(ctx, insert, key, user, seedHash).Scan(&k); err != nil {
			return err
		}
		_, err := pool.Exec(ctx, complete, key, user, 200, seedBody)
		return err
	}
}

// BenchmarkDoFirstExecution is one first execution of once.Do over the
// Store per op, beside the raw driver's (see rawFirstExecutions); with
// -memprofile it shows where the allocations go.
func BenchmarkDoFirstExecution(b *testing.B) {
	for _, c := range []struct {
		name string
		make func(testing.TB, int) func() error
	}{{"once", firstExecutions}, {"raw", rawFirstExecutions}} {
		b.Run(c.name, func(b *testing.B) {
			run := c.make(b, b.N+1)
			if err := run(); err != nil { // the statements prepared, the pool's connection made
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestAllocationBudgets checks allocsFirstExecution. Allocation counts
// are exact and repeatable, unlike timings; the race detector adds its
// own, so the budget is checked without it: CI runs the tests of this name
// apart, without -race.
func TestAllocationBudgets(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	const runs = 200
	measure := func(run func() error) float64 {
		if err := run(); err != nil { // warm: prepared statements, a connection
			t.Fatal(err)
		}
		var failed error
		n := testing.AllocsPerRun(runs, func() {
			if err := run(); err != nil && failed == nil {
				failed = err
			}
		})
		if failed != nil {
			t.Fatal(failed)
		}
		return n
	}
	raw := measure(rawFirstExecutions(t, runs+2))
	got := measure(firstExecutions(t, runs+2))
	t.Logf("first execution: %.1f allocations (budget %d); the raw driver's: %.1f", got, allocsFirstExecution, raw)
	if got > allocsFirstExecution {
		t.Errorf("a first execution allocates %.1f times per Do, over its budget of %d", got, allocsFirstExecution)
	}
}
