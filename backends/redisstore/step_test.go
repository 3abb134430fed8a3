package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestStepsResumeThroughTheCore runs once.Step on the store: an execution
// that fails retryably after two steps leaves both checkpointed (Release
// keeps the record for them), and the next execution takes the record
// over and runs neither again.
func TestStepsResumeThroughTheCore(t *testing.T) {
	s := newStore(t, singleClient(t), nil)
	scope := once.New(s).Scope(backendtest.Scope(t))
	down := errors.New("shipping down")
	var holds, charges, ships int
	intent := func(shipFails bool) (string, error) {
		return once.Do(t.Context(), scope, "order-1", nil, func(ctx context.Context) (string, error) {
			hold, err := once.Step(ctx, "hold", func(context.Context) (string, error) { holds++; return "held", nil })
			if err != nil {
				return "", err
			}
			charge, err := once.Step(ctx, "charge", func(context.Context) (int, error) { charges++; return 4200, nil })
			if err != nil {
				return "", err
			}
			ships++
			if shipFails {
				return "", down
			}
			return hold + "/" + strconv.Itoa(charge), nil
		})
	}
	_, err := intent(true)
	require.ErrorIs(t, err, down)
	v, err := intent(false)
	require.NoError(t, err)
	require.Equal(t, "held/4200", v)
	require.Equal(t, 1, holds, "the checkpointed steps did not run again")
	require.Equal(t, 1, charges)
	require.Equal(t, 2, ships)
	v, err = intent(false)
	require.NoError(t, err)
	require.Equal(t, "held/4200", v, "a replay")
	require.Equal(t, 2, ships, "runs nothing")
}
