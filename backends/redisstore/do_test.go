package redisstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestDoCommands counts Redis commands per once.Do: a first execution costs
// two round trips (the claim's transaction, complete.lua), a replay one
// (the claim's transaction).
func TestDoCommands(t *testing.T) {
	c, n := countingClient(t)
	s := newStore(t, c, nil)
	warmPipelines(t, s, n)
	scope := once.New(s).Scope(backendtest.Scope(t))
	ctx := context.Background()
	runs := 0
	fn := func(context.Context) (string, error) { runs++; return "paid", nil }

	v, err := once.Do(ctx, scope, "order-1", nil, fn)
	require.NoError(t, err)
	assert.Equal(t, "paid", v)
	assert.Equal(t, append(append([]string{}, claimCommands...), "evalsha"), n.take(), "first execution")

	v, err = once.Do(ctx, scope, "order-1", nil, fn)
	require.NoError(t, err)
	assert.Equal(t, "paid", v)
	assert.Equal(t, claimCommands, n.take(), "replay")
	assert.Equal(t, 1, runs)
}
