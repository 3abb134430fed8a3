package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends/redisstore"
)

// TestNewRefusesUnsupportedClients: a *redis.Ring (which moves keys
// between shards when one fails its health check) and a nil client are
// refused with an *UnsupportedClientError before anything is sent: the
// Ring's one shard is an address nobody listens on, which New would
// otherwise report as unreachable.
func TestNewRefusesUnsupportedClients(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	t.Cleanup(func() { _ = ring.Close() })
	for _, tc := range []struct {
		client redis.UniversalClient
		typ    string
	}{{ring, "*redis.Ring"}, {nil, "nil client"}} {
		s, err := redisstore.New(context.Background(), tc.client, nil)
		var e *redisstore.UnsupportedClientError
		require.ErrorAs(t, err, &e, "New accepted %s", tc.typ)
		assert.Nil(t, s)
		assert.Equal(t, tc.typ, e.Client)
		assert.NotErrorIs(t, err, redisstore.ErrUnavailable, "nothing was sent")
		assert.Contains(t, err.Error(), tc.typ+" is not supported")
	}
}
