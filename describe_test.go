package once_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// storedOutcome runs fn through Do on a fresh memory store and returns the
// outcome the store holds.
func storedOutcome(t *testing.T, opts []once.Option, fn func(context.Context) (any, error)) []byte {
	t.Helper()
	store := memory.New(nil)
	ctx := context.Background()
	_, _ = once.Do(ctx, once.New(store, opts...).Scope("s"), "k", nil, fn)
	rec, _, found, err := store.Get(ctx, "s", "k")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, backends.StateCompleted, rec.State)
	return rec.Outcome
}

func TestDescribeOutcome(t *testing.T) {
	data := storedOutcome(t, nil, func(context.Context) (any, error) {
		return map[string]int{"id": 7}, nil
	})
	kind, payload, err := once.DescribeOutcome(data)
	require.NoError(t, err)
	assert.Equal(t, once.OutcomeValue, kind)
	assert.JSONEq(t, `{"id":7}`, string(payload))

	data = storedOutcome(t, nil, func(context.Context) (any, error) {
		return nil, once.Final(&once.StoredError{Code: "card_declined", Message: "declined"})
	})
	kind, payload, err = once.DescribeOutcome(data)
	require.NoError(t, err)
	assert.Equal(t, once.OutcomeError, kind)
	var env struct{ Code, Message string }
	require.NoError(t, json.Unmarshal(payload, &env))
	assert.Equal(t, "card_declined", env.Code)
	assert.Equal(t, "declined", env.Message)

	data = storedOutcome(t, []once.Option{once.WithMaxOutcomeSize(4)}, func(context.Context) (any, error) {
		return "far too long", nil
	})
	kind, payload, err = once.DescribeOutcome(data)
	require.NoError(t, err)
	assert.Equal(t, once.OutcomeTooLarge, kind)
	assert.Empty(t, payload)

	for _, bad := range [][]byte{nil, {1}, {2, 1, '1'}, {1, 9}} {
		_, _, err := once.DescribeOutcome(bad)
		assert.True(t, errors.Is(err, once.ErrUndecodable), "%v: %v", bad, err)
	}
}
