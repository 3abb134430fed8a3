package backendtest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
)

// Benchmark measures the store operations behind the core's hot paths:
// a first execution (Claim then Complete on a new key) and a replay (Claim
// of a completed key), each serially and in parallel (b.RunParallel, so run
// with -cpu to choose the goroutine count).
func Benchmark(b *testing.B, newStore NewStore) {
	outcome := []byte(`{"order_id":"9b1e4d3a","status":"paid","amount":4200}`)
	fp := []byte("0123456789abcdef0123456789abcdef")

	first := func(b *testing.B, s backends.Store, scope string, n *atomic.Int64) {
		ctx := context.Background()
		key := "k" + strconv.FormatInt(n.Add(1), 10)
		owner := Token()
		r, err := s.Claim(ctx, claim(scope, key, owner, fp, longLease, longRetention))
		if err != nil || !r.Claimed {
			b.Fatalf("claim: %v %+v", err, r)
		}
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: outcome, Retention: longRetention})
		if err != nil || !ok {
			b.Fatalf("complete: %v %v", err, ok)
		}
	}
	replay := func(b *testing.B, s backends.Store, scope string) {
		r, err := s.Claim(context.Background(), claim(scope, "hot", "replayer", fp, longLease, longRetention))
		if err != nil || r.Existing.State != backends.StateCompleted {
			b.Fatalf("replay: %v %+v", err, r)
		}
	}
	seed := func(b *testing.B, s backends.Store, scope string) {
		owner := Token()
		ctx := context.Background()
		if _, err := s.Claim(ctx, claim(scope, "hot", owner, fp, longLease, longRetention)); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "hot", Owner: owner, Outcome: outcome, Retention: longRetention}); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("FirstExecution", func(b *testing.B) {
		s, scope := newStore(b), Scope(b)
		var n atomic.Int64
		b.ReportAllocs()
		for b.Loop() {
			first(b, s, scope, &n)
		}
	})
	b.Run("FirstExecutionParallel", func(b *testing.B) {
		s, scope := newStore(b), Scope(b)
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				first(b, s, scope, &n)
			}
		})
	})
	b.Run("Replay", func(b *testing.B) {
		s, scope := newStore(b), Scope(b)
		seed(b, s, scope)
		b.ReportAllocs()
		for b.Loop() {
			replay(b, s, scope)
		}
	})
	b.Run("ReplayParallel", func(b *testing.B) {
		s, scope := newStore(b), Scope(b)
		seed(b, s, scope)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				replay(b, s, scope)
			}
		})
	})
}

func claim(scope, key, owner string, fp []byte, lease, retention time.Duration) backends.ClaimParams {
	return backends.ClaimParams{Scope: scope, Key: key, Fingerprint: fp, Owner: owner, Lease: lease, Retention: retention}
}
