package postgres

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/backends/backendtest"
)

// BenchmarkRawBaseline issues the statements of BenchmarkStore straight
// through pgx, without the library, so that the library's overhead is the
// ratio of the two (run both with -cpu 1,16).
func BenchmarkRawBaseline(b *testing.B) {
	pool := newPool(b, nil)
	q := newStore(b, pool).sql
	outcome := []byte(`{"order_id":"9b1e4d3a","status":"paid","amount":4200}`)
	fp := []byte("0123456789abcdef0123456789abcdef")
	lease, retention := time.Minute.Microseconds(), time.Hour.Microseconds()

	claim := func(b *testing.B, pool *pgxpool.Pool, scope, key, owner string) claimRow {
		var r claimRow
		err := pool.QueryRow(context.Background(), q.claimSQL, scope, key, fp, owner, lease, retention, q.lockTimeout).
			Scan(&r.inserted, &r.tookOver, &r.found, &r.live, &r.state, &r.fp, &r.outcome, &r.leaseUS)
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	first := func(b *testing.B, scope string, n *atomic.Int64) {
		key := "k" + strconv.FormatInt(n.Add(1), 10)
		owner := backendtest.Token()
		if r := claim(b, pool, scope, key, owner); !r.inserted {
			b.Fatalf("claim: %+v", r)
		}
		var ok bool
		if err := pool.QueryRow(context.Background(), q.completeSQL, scope, key, owner, outcome, retention).Scan(&ok); err != nil || !ok {
			b.Fatalf("complete: %v", err)
		}
	}
	replay := func(b *testing.B, scope string) {
		if r := claim(b, pool, scope, "hot", "replayer"); r.state != 2 {
			b.Fatalf("replay: %+v", r)
		}
	}
	seed := func(b *testing.B, scope string) {
		claim(b, pool, scope, "hot", "seed")
		var ok bool
		if err := pool.QueryRow(context.Background(), q.completeSQL, scope, "hot", "seed", outcome, retention).Scan(&ok); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("FirstExecution", func(b *testing.B) {
		scope := backendtest.Scope(b)
		var n atomic.Int64
		b.ReportAllocs()
		for b.Loop() {
			first(b, scope, &n)
		}
	})
	b.Run("FirstExecutionParallel", func(b *testing.B) {
		scope := backendtest.Scope(b)
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				first(b, scope, &n)
			}
		})
	})
	b.Run("Replay", func(b *testing.B) {
		scope := backendtest.Scope(b)
		seed(b, scope)
		b.ReportAllocs()
		for b.Loop() {
			replay(b, scope)
		}
	})
	b.Run("ReplayParallel", func(b *testing.B) {
		scope := backendtest.Scope(b)
		seed(b, scope)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				replay(b, scope)
			}
		})
	})
}
