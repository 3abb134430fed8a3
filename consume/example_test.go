package consume_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/consume"
	"github.com/stagedoor/once/hashers"
)

// A consumer runs each message under consume.Do and acts on the decision: a
// redelivered message is acknowledged without running the handler again,
// a handler's retryable failure is retried, and a message whose key was
// reused with another payload goes to the dead-letter queue.
func ExampleDo() {
	ctx := context.Background()
	scope := once.New(nil).Scope("billing-workers") // the consumer group
	charge := func(context.Context) error { fmt.Println("charging order 42"); return nil }
	flaky := func(context.Context) error { return errors.New("provider 503") }

	deliveries := []struct {
		key     string
		payload string
		handler func(context.Context) error
	}{
		{"order-41", "41 EUR", flaky},  // fails: retry later
		{"order-42", "42 EUR", charge}, // runs
		{"order-42", "42 EUR", charge}, // redelivered: replayed
		{"order-42", "43 EUR", charge}, // same key, other payload
		{"", "no key", charge},         // no key
	}
	for _, m := range deliveries {
		d := consume.Do(ctx, scope, m.key, hashers.Strings(m.payload), m.handler)
		fmt.Printf("%-9q → %v\n", m.key, d)
	}
	// Output:
	// "order-41" → retry later (handler error)
	// charging order 42
	// "order-42" → ack (done)
	// "order-42" → ack (replayed)
	// "order-42" → dead letter (key reused)
	// ""        → dead letter (invalid key)
}
