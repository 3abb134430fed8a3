package once_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/stagedoor/once"
)

// LimitExceededError is a final answer with data: the customer's limit.
type LimitExceededError struct {
	LimitCents int64 `json:"limit_cents"`
}

func (e *LimitExceededError) Error() string {
	return fmt.Sprintf("limit of %d cents exceeded", e.LimitCents)
}

// A final error of a registered type is stored with its fields and comes
// back as that type on every replay, so errors.As works as on the first
// call. An unregistered one comes back as a *once.StoredError with its
// text.
func ExampleRegisterError() {
	ctx := context.Background()
	k := once.New(nil, once.RegisterError[*LimitExceededError]("limit_exceeded"))
	scope := k.Scope("buyer-42")
	refuse := func(ctx context.Context) (string, error) {
		return "", once.Final(&LimitExceededError{LimitCents: 50_000})
	}

	for _, call := range []string{"first call", "replay"} {
		_, err := once.Do(ctx, scope, "order-7", nil, refuse)
		var limit *LimitExceededError
		if errors.As(err, &limit) {
			fmt.Println(call+": limit", limit.LimitCents)
		}
	}

	unregistered := func(ctx context.Context) (string, error) {
		return "", once.Final(errors.New("card declined"))
	}
	_, _ = once.Do(ctx, scope, "order-8", nil, unregistered)
	_, err := once.Do(ctx, scope, "order-8", nil, unregistered)
	var stored *once.StoredError
	fmt.Println("unregistered replay:", errors.As(err, &stored), stored.Message)
	// Output:
	// first call: limit 50000
	// replay: limit 50000
	// unregistered replay: true card declined
}
