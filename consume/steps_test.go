package consume_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/consume"
)

// A redelivered message resumes its handler's steps: the charge made by
// the first delivery, whose handler then failed retryably, is not made
// again.
func TestRedeliveryResumesSteps(t *testing.T) {
	scope := once.New(nil).Scope("payments-consumer")
	charges, emails := 0, 0
	mailerDown := errors.New("mailer down")
	handler := func(ctx context.Context) error {
		if _, err := once.Step(ctx, "charge", func(context.Context) (string, error) { charges++; return "ch_1", nil }); err != nil {
			return err
		}
		_, err := once.Step(ctx, "email", func(context.Context) (bool, error) {
			if emails++; emails == 1 {
				return false, mailerDown
			}
			return true, nil
		})
		return err
	}
	d := consume.Do(t.Context(), scope, "msg-1", nil, handler)
	require.Equal(t, consume.RetryLater, d.Action)
	d = consume.Do(t.Context(), scope, "msg-1", nil, handler)
	require.Equal(t, consume.Ack, d.Action)
	require.Equal(t, 1, charges, "the redelivery resumed after the checkpointed charge")
	require.Equal(t, 2, emails)
}
