package once_test

import (
	"context"
	"testing"

	"github.com/stagedoor/once"
)

// BenchmarkLocalCacheReplay measures the replay of one hot key on the
// memory store without and with a local cache, from one goroutine and in
// parallel (-cpu and SetParallelism set how many goroutines).
func BenchmarkLocalCacheReplay(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []once.Option
	}{
		{"NoCache", nil},
		{"LocalCache", []once.Option{once.WithLocalCache(once.LocalCache{MaxEntries: 1024})}},
	} {
		scope := once.New(nil, c.opts...).Scope("bench")
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
		b.Run(c.name+"Parallel16", func(b *testing.B) {
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
}
