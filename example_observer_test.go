package once_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stagedoor/once"
)

// An observer sees every step of every call: here, a first execution, a
// replay, and a retryable failure that releases its key.
func ExampleWithObserver() {
	ctx := context.Background()
	observe := func(ctx context.Context, e once.Event) {
		line := fmt.Sprintf("%-8s %s/%s", e.Kind, e.Scope, e.Key)
		if e.Op != "" {
			line += " store: " + e.Op
		}
		if e.FnErr != nil {
			line += fmt.Sprintf(" (fn: %v, %v)", e.FnErr, e.Class)
		}
		fmt.Println(line)
	}
	k := once.New(nil, once.WithObserver(observe))
	scope := k.Scope("buyer-42")

	charge := func(ctx context.Context) (string, error) { return "ch_1", nil }
	_, _ = once.Do(ctx, scope, "order-1", nil, charge)
	_, _ = once.Do(ctx, scope, "order-1", nil, charge)
	_, _ = once.Do(ctx, scope, "order-2", nil, func(ctx context.Context) (string, error) {
		return "", errors.New("provider 503")
	})
	// Output:
	// claimed  buyer-42/order-1 store: claim
	// executed buyer-42/order-1
	// recorded buyer-42/order-1 store: complete
	// replayed buyer-42/order-1 store: claim
	// claimed  buyer-42/order-2 store: claim
	// executed buyer-42/order-2 (fn: provider 503, retryable)
	// released buyer-42/order-2 store: release
}
