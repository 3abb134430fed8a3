package redisstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends/redisstore"
)

// aclUser creates user (password "pw") on the private server of admin,
// with what the store needs (every key and channel, every command) but
// INFO, of which it is allowed only the sections in infoSections
// (+info|<section>, Redis 7's first-argument rule), and returns a client
// of it.
func aclUser(t *testing.T, admin *redis.Client, user string, infoSections ...string) *redis.Client {
	t.Helper()
	rules := []any{"ACL", "SETUSER", user, "on", ">pw", "~*", "&*", "+@all", "-info"}
	for _, s := range infoSections {
		rules = append(rules, "+info|"+s)
	}
	require.NoError(t, admin.Do(context.Background(), rules...).Err())
	o := *admin.Options()
	o.Username, o.Password = user, "pw"
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestNewWithInfoMemoryOnly: an ACL user allowed INFO memory alone is
// refused New's one INFO server cluster memory (Redis 7's first-argument
// rule checks the first section, server); New then asks each section
// alone, and the eviction check decides on INFO memory, as
// CheckEvictionPolicy does: New succeeds on a noeviction server, fails
// under EvictionRefuse with an *EvictionPolicyError naming the server's
// policy once it is another, and warns under EvictionWarn.
func TestNewWithInfoMemoryOnly(t *testing.T) {
	opt := privateRedis(t)
	ctx := context.Background()
	admin := redis.NewClient(opt)
	defer admin.Close()
	c := aclUser(t, admin, "memonly", "memory")
	err := c.Info(ctx, "server", "cluster", "memory").Err()
	require.True(t, redis.HasErrorPrefix(err, "NOPERM"), "the combined INFO is refused: %v", err)
	err = c.Info(ctx, "server").Err()
	require.True(t, redis.HasErrorPrefix(err, "NOPERM"), "INFO server is refused: %v", err)
	require.NoError(t, c.Info(ctx, "memory").Err(), "INFO memory is allowed")
	args := &infoArgs{}
	c.AddHook(args)

	for name, check := range map[string]redisstore.EvictionCheck{"EvictionWarn": redisstore.EvictionWarn, "EvictionRefuse": redisstore.EvictionRefuse} {
		_, err := redisstore.New(ctx, c, &redisstore.Config{KeyPrefix: testPrefix, EvictionPolicyCheck: check})
		require.NoError(t, err, "%s on a noeviction server", name)
	}
	one := [][]any{{"info", "server", "cluster", "memory"}, {"info", "server"}, {"info", "cluster"}, {"info", "memory"}}
	assert.Equal(t, append(one, one...), args.get(), "each New: the combined INFO, then each section alone")

	require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
	_, err = redisstore.New(ctx, c, &redisstore.Config{KeyPrefix: testPrefix, EvictionPolicyCheck: redisstore.EvictionRefuse})
	var e *redisstore.EvictionPolicyError
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "allkeys-lru", e.Policy)
	assert.Equal(t, opt.Addr, e.Addr)

	var log bytes.Buffer
	s, err := redisstore.New(ctx, c, &redisstore.Config{KeyPrefix: testPrefix, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err, "EvictionWarn")
	assert.Contains(t, log.String(), "maxmemory-policy=allkeys-lru")
	require.ErrorAs(t, s.CheckEvictionPolicy(ctx), &e, "CheckEvictionPolicy agrees")

	// A user allowed no section of INFO fails the eviction check on the
	// server's reply to INFO memory (see TestNewOnHiddenInfo).
	none := aclUser(t, admin, "noinfo")
	_, err = redisstore.New(ctx, none, &redisstore.Config{KeyPrefix: testPrefix, EvictionPolicyCheck: redisstore.EvictionRefuse})
	require.ErrorIs(t, err, redisstore.ErrServer)
	var ee *redisstore.Error
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "eviction check", ee.Op)
	assert.Contains(t, ee.Detail, "NOPERM")
}
