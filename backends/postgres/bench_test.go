package postgres

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/pgsql"
)

// BenchmarkRawBaseline is the seed's mechanism written minimally against
// pgx, in its own six-column table (internal/pgsql SeedTable), for
// comparison with BenchmarkStore (run both with -cpu 1,16): a first
// execution is INSERT … ON CONFLICT DO NOTHING RETURNING then UPDATE; a
// replay is the same insert, then a SELECT. It never sends the library's
// statements.
// The raw driver's response body and request hash.
var (
	seedBody = []byte(`{"order_id":"9b1e4d3a","status":"paid","amount":4200}`)
	seedHash = []byte("0123456789abcdef0123456789abcdef")
)

// newSeedTable creates a seed table (internal/pgsql SeedTable) in this
// run's schema and returns its name and statements.
func newSeedTable(tb testing.TB, pool *pgxpool.Pool) (table, insert, complete, fetch string) {
	table = pgx.Identifier{testSchema, "seed_" + randomSuffix()}.Sanitize()
	seed := strings.NewReplacer("{seed}", table)
	if _, err := pool.Exec(context.Background(), seed.Replace(pgsql.SeedTable)); err != nil {
		tb.Fatal(err)
	}
	return table, seed.Replace(pgsql.SeedInsert), seed.Replace(pgsql.SeedComplete), seed.Replace(pgsql.SeedFetch)
}

func BenchmarkRawBaseline(b *testing.B) {
	pool := newPool(b, nil)
	ctx := context.Background()
	table, insert, complete, fetch := newSeedTable(b, pool)

	first := func(b *testing.B, user string, n *atomic.Int64) {
		key := "k" + strconv.FormatInt(n.Add(1), 10)
		var k string
		if err := pool.QueryRow(ctx, insert, key, user, seedHash).Scan(&k); err != nil {
			b.Fatalf("insert: %v", err)
		}
		if _, err := pool.Exec(ctx, complete, key, user, 200, seedBody); err != nil {
			b.Fatalf("complete: %v", err)
		}
	}
	replay := func(b *testing.B, user string) {
		var k string
		if err := pool.QueryRow(ctx, insert, "hot", user, seedHash).Scan(&k); err != pgx.ErrNoRows {
			b.Fatalf("replay insert: %v", err)
		}
		var h, got []byte
		var status *int32
		if err := pool.QueryRow(ctx, fetch, "hot", user).Scan(&h, &status, &got); err != nil || status == nil {
			b.Fatalf("replay fetch: %v", err)
		}
	}
	seedHot := func(b *testing.B, user string) {
		var n atomic.Int64
		first(b, user, &n)
		if _, err := pool.Exec(ctx, `UPDATE `+table+` SET key = 'hot' WHERE user_id = $1`, user); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("FirstExecution", func(b *testing.B) {
		user := backendtest.Scope(b)
		var n atomic.Int64
		b.ReportAllocs()
		for b.Loop() {
			first(b, user, &n)
		}
	})
	b.Run("FirstExecutionParallel", func(b *testing.B) {
		user := backendtest.Scope(b)
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				first(b, user, &n)
			}
		})
	})
	b.Run("Replay", func(b *testing.B) {
		user := backendtest.Scope(b)
		seedHot(b, user)
		b.ReportAllocs()
		for b.Loop() {
			replay(b, user)
		}
	})
	b.Run("ReplayParallel", func(b *testing.B) {
		user := backendtest.Scope(b)
		seedHot(b, user)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				replay(b, user)
			}
		})
	})
}
