package consume_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/hashers"
)

// A handler that produces a value (here, the shipment a paid order
// creates) runs under consume.Value: a redelivered message gets the stored
// value back without a second shipment, and a payload that can never be
// processed is rejected to the dead-letter queue, its key left free for a
// corrected copy.
func ExampleValue() {
	ctx := context.Background()
	scope := once.New(nil).Scope("shipping-workers") // the consumer group
	shipments := 0
	ship := func(payload string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) {
			order, ok := strings.CutPrefix(payload, "paid:")
			if !ok {
				return "", consume.Reject(errors.New("not a paid order: " + payload))
			}
			shipments++
			return fmt.Sprintf("shipment %d for order %s", shipments, order), nil
		}
	}

	for _, m := range []struct{ key, payload string }{
		{"msg-1", "paid:42"},
		{"msg-1", "paid:42"}, // redelivered
		{"msg-2", "refund:43"},
		{"msg-2", "paid:43"}, // corrected copy, same key
	} {
		shipment, d := consume.Value(ctx, scope, m.key, hashers.Strings(m.payload), ship(m.payload))
		fmt.Printf("%s → %v %q\n", m.key, d, shipment)
	}
	fmt.Println("shipments:", shipments)
	// Output:
	// msg-1 → ack (done) "shipment 1 for order 42"
	// msg-1 → ack (replayed) "shipment 1 for order 42"
	// msg-2 → dead letter (rejected) ""
	// msg-2 → ack (done) "shipment 2 for order 43"
	// shipments: 2
}
