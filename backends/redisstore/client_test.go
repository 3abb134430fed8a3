package redisstore_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends/redisstore"
)

// wrappedClient is a redis.UniversalClient of the caller's own type.
type wrappedClient struct{ *redis.Client }

// TestNewRefusesUnsupportedClients: a *redis.Ring (which moves keys
// between shards when one fails its health check), a nil client (a nil
// interface, or a nil pointer of any client type, go-redis's or the
// caller's) and a zero *redis.Client or *redis.ClusterClient (not made by
// a constructor) are refused with an *UnsupportedClientError before
// anything is sent, instead of panicking: the Ring's one shard is an
// address nobody listens on, which New would otherwise report as
// unreachable.
func TestNewRefusesUnsupportedClients(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	t.Cleanup(func() { _ = ring.Close() })
	for _, tc := range []struct {
		client redis.UniversalClient
		typ    string
	}{
		{ring, "*redis.Ring"},
		{nil, "nil client"},
		{(*redis.Client)(nil), "nil *redis.Client"},
		{(*redis.ClusterClient)(nil), "nil *redis.ClusterClient"},
		{(*redis.Ring)(nil), "nil *redis.Ring"},
		{(*wrappedClient)(nil), "nil *redisstore_test.wrappedClient"},
		{&redis.Client{}, "zero *redis.Client"},
		{&redis.ClusterClient{}, "zero *redis.ClusterClient"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			var s *redisstore.Store
			var err error
			require.NotPanics(t, func() { s, err = redisstore.New(context.Background(), tc.client, nil) })
			var e *redisstore.UnsupportedClientError
			require.ErrorAs(t, err, &e, "New accepted %s", tc.typ)
			assert.Nil(t, s)
			assert.Equal(t, tc.typ, e.Client)
			assert.NotErrorIs(t, err, redisstore.ErrUnavailable, "nothing was sent")
			assert.Contains(t, err.Error(), "a "+tc.typ+" is not supported")
		})
	}
}

// TestNewRefusesKeyPrefixWithBrace: a Config.KeyPrefix containing "{"
// is refused with a *KeyPrefixError before anything is sent (the client's
// address is one nobody listens on): its records could share keys with
// those of another prefix (see Config.KeyPrefix).
func TestNewRefusesKeyPrefixWithBrace(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = c.Close() })
	for _, prefix := range []string{"once:{5:", "{tenant}:", "once{"} {
		s, err := redisstore.New(context.Background(), c, &redisstore.Config{KeyPrefix: prefix})
		var e *redisstore.KeyPrefixError
		require.ErrorAs(t, err, &e, "New accepted the prefix %q", prefix)
		assert.Nil(t, s)
		assert.Equal(t, prefix, e.Prefix)
		assert.NotErrorIs(t, err, redisstore.ErrUnavailable, "nothing was sent")
	}
}

// TestNewRefusesWrappedNilClients: a client of the caller's own type that
// is not nil itself but wraps a nil or zero *redis.Client panics on its
// first command; New reports an *UnsupportedClientError instead.
func TestNewRefusesWrappedNilClients(t *testing.T) {
	for name, c := range map[string]*wrappedClient{
		"nil":  {},
		"zero": {&redis.Client{}},
	} {
		t.Run(name, func(t *testing.T) {
			var s *redisstore.Store
			var err error
			require.NotPanics(t, func() { s, err = redisstore.New(context.Background(), c, nil) })
			var e *redisstore.UnsupportedClientError
			require.ErrorAs(t, err, &e)
			assert.Nil(t, s)
			assert.Equal(t, "*redisstore_test.wrappedClient", e.Client)
			assert.Contains(t, err.Error(), "panicked")
		})
	}
}

// TestNewAcceptsWrappedClients: a client of the caller's own type that
// wraps a working client is not taken for a nil or zero one.
func TestNewAcceptsWrappedClients(t *testing.T) {
	_, err := redisstore.New(context.Background(), &wrappedClient{singleClient(t)}, nonDefault(testPrefix))
	require.NoError(t, err)
}
