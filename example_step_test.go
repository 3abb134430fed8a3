package once_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stagedoor/once"
)

// An order of two effects: the charge is checkpointed, so the retry after
// the order service failed does not charge again.
func ExampleStep() {
	scope := once.New(nil).Scope("buyer-42")
	orderServiceUp := false
	placeOrder := func(ctx context.Context) (string, error) {
		chargeID, err := once.Step(ctx, "charge", func(ctx context.Context) (string, error) {
			fmt.Println("charging the card")
			return "ch_1", nil
		})
		if err != nil {
			return "", err
		}
		return once.Step(ctx, "order", func(ctx context.Context) (string, error) {
			if !orderServiceUp {
				return "", errors.New("order service unavailable") // retryable
			}
			fmt.Println("writing the order for", chargeID)
			return "order-9b1e4d3a", nil
		})
	}
	_, err := once.Do(context.Background(), scope, "checkout-9b1e4d3a", nil, placeOrder)
	fmt.Println("first attempt:", err)
	orderServiceUp = true
	order, err := once.Do(context.Background(), scope, "checkout-9b1e4d3a", nil, placeOrder)
	fmt.Println("retry:", order, err)
	// Output:
	// charging the card
	// first attempt: order service unavailable
	// writing the order for ch_1
	// retry: order-9b1e4d3a <nil>
}
