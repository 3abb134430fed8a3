package localcache_test

import (
	"context"
	"testing"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/localcache"
	"github.com/stagedoor/once/internal/testservers"
)

type payment struct {
	OrderID string `json:"order_id"`
	Status  string `json:"status"`
	Amount  int    `json:"amount"`
}

func chargeFn(context.Context) (payment, error) {
	return payment{OrderID: "9b1e4d3a", Status: "paid", Amount: 4200}, nil
}

var benchFP = once.Fingerprint("0123456789abcdef0123456789abcdef")

// BenchmarkReplay measures the replay of one hot key on every store,
// straight from the store (Uncached) and through the cache (Cached), from
// one goroutine and from 8 per -cpu (Parallel).
func BenchmarkReplay(b *testing.B) {
	ctx := context.Background()
	for name, newStore := range testservers.Stores() {
		b.Run(name, func(b *testing.B) {
			store := newStore(b)
			for _, c := range []struct {
				name  string
				store backends.Store
			}{
				{"Uncached", store},
				{"Cached", cached(b, store, localcache.Config{})},
			} {
				scope := once.New(c.store).Scope("bench-" + testservers.Suffix())
				if _, err := once.Do(ctx, scope, "hot", benchFP, chargeFn); err != nil {
					b.Fatal(err)
				}
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						if _, err := once.Do(ctx, scope, "hot", benchFP, chargeFn); err != nil {
							b.Fatal(err)
						}
					}
				})
				b.Run(c.name+"Parallel", func(b *testing.B) {
					b.ReportAllocs()
					b.SetParallelism(8)
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							if _, err := once.Do(ctx, scope, "hot", benchFP, chargeFn); err != nil {
								b.Fatal(err)
							}
						}
					})
				})
			}
		})
	}
}
