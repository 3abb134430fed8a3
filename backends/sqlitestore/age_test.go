package sqlitestore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// An age is never negative, even for a record claimed or held after the
// now a read took: Count reads its clock before its query's snapshot, so
// it saw claims committed in between made in the future (a negative
// OldestPending), and a clock that steps back (a corrected wall clock) did
// the same to a claim answer's and Get's Age. (List's age filter, created
// at or before now minus OlderThan, lists no such record.) The fake clock
// steps back an hour here.
func TestAgesNeverNegative(t *testing.T) {
	clock := &fakeClock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	s := openStore(t, tempDB(t), &Config{Now: clock.Now})
	ctx := context.Background()
	claim := func(key, owner string) backends.ClaimResult {
		t.Helper()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: key, Owner: owner, Lease: time.Minute, Retention: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, key := range []string{"pending", "held"} {
		if r := claim(key, "a"); !r.Claimed {
			t.Fatalf("claim %s: %+v", key, r)
		}
	}
	if ok, err := s.Hold(ctx, backends.HoldParams{Scope: "s", Key: "held", Owner: "a", For: time.Hour, Retention: time.Hour}); err != nil || !ok {
		t.Fatalf("hold: %v %v", ok, err)
	}
	clock.Advance(-time.Hour)

	c, err := s.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pending != 1 || c.Held != 1 || c.OldestPending != 0 || c.OldestHeld != 0 {
		t.Fatalf("count %+v, want one pending and one held record, both zero old", c)
	}
	for _, key := range []string{"pending", "held"} {
		if r := claim(key, "b"); r.Claimed || r.Existing.Age != 0 {
			t.Fatalf("duplicate claim of %s: %+v, want its record, zero old", key, r)
		}
		rec, err := s.Get(ctx, "s", key)
		found := rec.State != 0
		if err != nil || !found || rec.Age != 0 {
			t.Fatalf("get %s: %+v found=%v %v, want zero old", key, rec, found, err)
		}
	}
}

// TestCountAgeNeverNegativeUnderLoad provokes Count's race for real:
// claims completed at once, so that the only pending rows are the ones in
// flight, while Count runs in a loop.
func TestCountAgeNeverNegativeUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a 5 s load test")
	}
	s := openStore(t, tempDB(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	deadline := time.Now().Add(5 * time.Second)
	scope := backendtest.Scope(t)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var n atomic.Int64
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load() && ctx.Err() == nil; i++ {
				owner := backendtest.Token()
				key := fmt.Sprintf("g%d-%d", g, i)
				r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Lease: time.Minute, Retention: time.Millisecond})
				if err != nil || !r.Claimed {
					continue
				}
				_, _ = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: []byte("v"), Retention: time.Millisecond})
				n.Add(1)
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for i := 0; time.Now().Before(deadline); i++ {
		c, err := s.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c.OldestPending < 0 || c.OldestHeld < 0 {
			t.Fatalf("count %d (after %d claims): negative age: %+v", i, n.Load(), c)
		}
	}
}
