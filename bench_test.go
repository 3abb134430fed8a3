package once_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stagedoor/once"
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

// BenchmarkDoMemory measures Do on the embedded memory store: a first
// execution per op (claim, fn, complete), a replay of one hot key, and both
// from parallel goroutines (-cpu sets how many).
func BenchmarkDoMemory(b *testing.B) {
	ctx := context.Background()
	b.Run("FirstExecution", func(b *testing.B) {
		scope := once.New(nil).Scope("bench")
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := once.Do(ctx, scope, "k"+strconv.Itoa(i), benchFP, chargeFn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Replay", func(b *testing.B) {
		scope := once.New(nil).Scope("bench")
		if _, err := once.Do(ctx, scope, "hot", benchFP, chargeFn); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := once.Do(ctx, scope, "hot", benchFP, chargeFn); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("FirstExecutionParallel", func(b *testing.B) {
		scope := once.New(nil).Scope("bench")
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := once.Do(ctx, scope, "k"+strconv.FormatInt(n.Add(1), 10), benchFP, chargeFn); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
	b.Run("ReplayParallel", func(b *testing.B) {
		scope := once.New(nil).Scope("bench")
		if _, err := once.Do(ctx, scope, "hot", benchFP, chargeFn); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := once.Do(ctx, scope, "hot", benchFP, chargeFn); err != nil {
					b.Fatal(err)
				}
			}
		})
	})
}
