package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestKeysLandApart stores one record per odd (scope, key) pair and checks,
// on the server, that each pair has its own Redis key.
func TestKeysLandApart(t *testing.T) {
	c := singleClient(t)
	prefix := testPrefix + "apart-" + backendtest.Token() + ":"
	s := newStore(t, c, nonDefault(prefix))
	ctx := context.Background()
	pairs := [][2]string{
		{"a:b", "c"}, {"a", "b:c"}, {"{a}", "b"}, {"{a", "}b"}, {"a}", "b"},
		{"*", "*"}, {"a", "*"}, {"*", "a"}, {"%7D", "x"}, {"}", "x"}, {"1:a", "b"}, {"1", "a:b"},
	}
	for i, p := range pairs {
		owner := backendtest.Token()
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: p[0], Key: p[1], Owner: owner, Lease: time.Minute, Retention: time.Minute})
		require.NoError(t, err)
		require.True(t, r.Claimed, "%q/%q collided with an earlier pair", p[0], p[1])
		ok, err := s.Complete(ctx, backends.CompleteParams{Scope: p[0], Key: p[1], Owner: owner, Outcome: []byte{byte(i)}, Retention: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
	}
	keys, err := c.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	assert.Len(t, keys, len(pairs), "one Redis key per pair: %q", keys)
}
