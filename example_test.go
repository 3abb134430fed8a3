package once_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stagedoor/once"
)

// CardDeclinedError is a final answer to a charge: replayed, never retried.
type CardDeclinedError struct {
	Reason string `json:"reason"`
}

func (e *CardDeclinedError) Error() string { return "card declined: " + e.Reason }

func ExampleDo() {
	ctx := context.Background()
	k := once.New(nil) // the embedded in-memory store
	scope := k.Scope("user-42")
	fp := once.Fingerprint("sha256-of-the-request")

	charges := 0
	charge := func(ctx context.Context) (string, error) {
		charges++
		return "ch_1", nil
	}

	// The browser sends POST /orders twice with the same Idempotency-Key.
	first, _ := once.Do(ctx, scope, "7f3a9c2e", fp, charge)
	second, _ := once.Do(ctx, scope, "7f3a9c2e", fp, charge)
	fmt.Println(first, second, "charges:", charges)

	// The same key with another request is a client bug.
	_, err := once.Do(ctx, scope, "7f3a9c2e", once.Fingerprint("another-request"), charge)
	fmt.Println(errors.Is(err, once.ErrKeyReused))
	// Output:
	// ch_1 ch_1 charges: 1
	// true
}

func ExampleFinal() {
	ctx := context.Background()
	k := once.New(nil, once.RegisterError[*CardDeclinedError]("card_declined"))
	scope := k.Scope("user-42")

	attempts := 0
	charge := func(ctx context.Context) (string, error) {
		attempts++
		return "", once.Final(&CardDeclinedError{Reason: "insufficient_funds"})
	}
	for range 2 {
		out, err := once.DoOutcome(ctx, scope, "order-881", nil, charge)
		var declined *CardDeclinedError
		fmt.Println(errors.As(err, &declined), declined.Reason, "status:", out.Status)
	}
	fmt.Println("attempts:", attempts)
	// Output:
	// true insufficient_funds status: recorded
	// true insufficient_funds status: replayed
	// attempts: 1
}

func ExampleDerivedKey() {
	fmt.Println(once.DerivedKey("order", "9b1e4d3a"))
	// Output: order-9b1e4d3a
}
