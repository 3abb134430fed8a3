package once_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stagedoor/once"
)

// A charge timed out after its request left, so its key is held until
// resolved. Once the provider says it charged, Resolve stores that charge
// and the buyer's retry gets it, replayed, without charging again.
func ExampleResolve() {
	ctx := context.Background()
	k := once.New(nil, once.WithHoldFor(once.HoldUntilResolved))
	scope := k.Scope("buyer-42")
	charges := 0
	charge := func(ctx context.Context) (string, error) {
		charges++
		return "", once.Hold(errors.New("provider: no answer within 10s (request sent)"))
	}

	_, err := once.Do(ctx, scope, "order-1042", nil, charge)
	fmt.Println("first call:", err)
	_, err = once.Do(ctx, scope, "order-1042", nil, charge)
	var busy *once.InProgressError
	fmt.Println("retry while held:", errors.As(err, &busy) && busy.Held)

	// The reconciliation learns the truth: the provider charged ch_3Q9xZ.
	if err := once.Resolve(ctx, scope, "order-1042", nil, "ch_3Q9xZ", nil); err != nil {
		panic(err)
	}
	receipt, err := once.Do(ctx, scope, "order-1042", nil, charge)
	fmt.Println("retry after Resolve:", receipt, err)
	fmt.Println("charges:", charges)
	// Output:
	// first call: provider: no answer within 10s (request sent)
	// retry while held: true
	// retry after Resolve: ch_3Q9xZ <nil>
	// charges: 1
}
