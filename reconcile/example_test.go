package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/reconcile"
)

// A Job settles held keys by asking the downstream service what became of
// each request. Here the provider charged one order and has no
// record of the other: the first is resolved with its charge, the second
// stays held, since the request may still reach the provider.
func Example() {
	ctx := context.Background()
	k := once.New(nil, once.WithHoldFor(once.HoldUntilResolved))
	scope := k.Scope("shop")
	timeout := func(ctx context.Context) (string, error) {
		return "", once.Hold(errors.New("provider timeout"))
	}
	for _, order := range []string{"order-1", "order-2"} {
		_, _ = once.Do(ctx, scope, order, nil, timeout)
	}

	charged := map[string]string{"order-1": "ch_1"} // what the provider knows
	var asked []string
	r, err := reconcile.New(k, func(ctx context.Context, h reconcile.HeldKey) (reconcile.Verdict[string], error) {
		id, ok := charged[h.Key]
		asked = append(asked, fmt.Sprintf("%s: charged %v", h.Key, ok))
		return reconcile.Verdict[string]{Settled: ok, Value: id}, nil // unsettled: the key stays held
	}, reconcile.Config{})
	if err != nil {
		panic(err)
	}
	report, err := r.Pass(ctx)
	slices.Sort(asked) // a pass lists held keys in no particular order
	fmt.Println("asked the provider about", strings.Join(asked, ", "))
	fmt.Printf("examined %d, resolved %d, left held %d, err %v\n", report.Examined, report.Resolved, report.LeftHeld, err)

	receipt, _ := once.Do(ctx, scope, "order-1", nil, timeout)
	fmt.Println("order-1 replays", receipt)
	// Output:
	// asked the provider about order-1: charged true, order-2: charged false
	// examined 2, resolved 1, left held 1, err <nil>
	// order-1 replays ch_1
}
