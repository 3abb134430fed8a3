package once_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/memory"
)

// WithHoldFor sets how long a key stays held after an unknown outcome.
// Retries meanwhile are told to come back when the hold ends; after it, the
// next call runs fn again, which is safe because the charge carries a key
// derived from the order, which the provider deduplicates.
func ExampleWithHoldFor() {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) // the store's clock, moved by hand
	k := once.New(memory.New(&memory.Config{Now: func() time.Time { return now }}), once.WithHoldFor(time.Minute))
	scope := k.Scope("buyer-42")
	attempts := 0
	charge := func(ctx context.Context) (string, error) {
		attempts++
		if attempts == 1 {
			return "", once.Hold(errors.New("provider timeout"))
		}
		return "ch_" + once.DerivedKey("order", "1042"), nil
	}

	_, err := once.Do(ctx, scope, "checkout-1042", nil, charge)
	fmt.Println("first call:", err)
	now = now.Add(20 * time.Second)
	_, err = once.Do(ctx, scope, "checkout-1042", nil, charge)
	var held *once.InProgressError
	if errors.As(err, &held) {
		fmt.Println("20s later: held, retry after", held.RetryAfter)
	}
	now = now.Add(40 * time.Second)
	receipt, err := once.Do(ctx, scope, "checkout-1042", nil, charge)
	fmt.Println("after the hold:", receipt, err, "attempts:", attempts)
	// Output:
	// first call: provider timeout
	// 20s later: held, retry after 40s
	// after the hold: ch_order-1042 <nil> attempts: 2
}
