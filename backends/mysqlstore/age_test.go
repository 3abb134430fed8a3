package mysqlstore

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

// A statement reads UTC_TIMESTAMP(6) when it starts, before InnoDB gives
// it its read view, so it may see a claim (or a hold) that committed in
// between as made after its own "now": Count reported a negative
// OldestPending (the backendtest model met -296µs under load), and a
// claim answer or Get a negative Age. An age is never negative. This
// stands for such a row with one claimed and one held an hour "in the
// future", on every path that reports an age.
func TestAgesNeverNegative(t *testing.T) {
	db := newDB(t, nil)
	s := newTable(t, db, Config{})
	ctx := context.Background()
	scope := backendtest.Scope(t)
	pending, held := claimParams(scope, "pending"), claimParams(scope, "held")
	for _, p := range []backends.ClaimParams{pending, held} {
		if r, err := s.Claim(ctx, p); err != nil || !r.Claimed {
			t.Fatalf("claim %s: %+v %v", p.Key, r, err)
		}
	}
	if ok, err := s.Hold(ctx, backends.HoldParams{Scope: scope, Key: "held", Owner: held.Owner, For: time.Hour, Retention: time.Hour}); err != nil || !ok {
		t.Fatalf("hold: %v %v", ok, err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE "+quote(s.cfg.table)+" SET created_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR,"+
		" held_at = IF(state = 3, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR, NULL) WHERE scope = ?", scope); err != nil {
		t.Fatal(err)
	}

	c, err := s.Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Pending != 1 || c.Held != 1 || c.OldestPending != 0 || c.OldestHeld != 0 {
		t.Fatalf("count %+v, want one pending and one held record, both zero old", c)
	}
	for name, cfg := range map[string]Config{"insertFirst": {}, "readFirst": {ReadFirstClaims: true}, "oneRoundTrip": {OneRoundTripClaims: true}} {
		cfg.Table = s.cfg.table
		st, err := New(db, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = st.Close() }()
		for _, key := range []string{"pending", "held"} {
			r, err := st.Claim(ctx, claimParams(scope, key))
			if err != nil || r.Claimed || r.Existing.Age != 0 {
				t.Fatalf("%s: duplicate claim of %s: %+v %v, want its record, zero old", name, key, r, err)
			}
		}
	}
	for _, key := range []string{"pending", "held"} {
		rec, err := s.Get(ctx, scope, key)
		found := rec.State != 0
		if err != nil || !found || rec.Age != 0 {
			t.Fatalf("get %s: %+v found=%v %v, want zero old", key, rec, found, err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if r, err := s.InTx(tx).Claim(ctx, claimParams(scope, "pending")); err != nil || r.Claimed || r.Existing.Age != 0 {
		t.Fatalf("duplicate claim in a transaction: %+v %v, want its record, zero old", r, err)
	}
}

// TestCountAgeNeverNegativeUnderLoad provokes the race of
// TestAgesNeverNegative for real: claims completed at once, so that the
// only pending rows are the ones in flight, while Count runs in a loop.
func TestCountAgeNeverNegativeUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a 5 s load test")
	}
	db := newDB(t, nil)
	s := newTable(t, db, Config{})
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
