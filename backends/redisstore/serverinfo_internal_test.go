package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// TestSentinelPrimaryNamed: through a Sentinel failover client, whose
// options' address is go-redis's placeholder "FailoverClient", New's
// errors name "the Sentinel primary" instead of that placeholder, and
// the server inspected is the primary.
func TestSentinelPrimaryNamed(t *testing.T) {
	c := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    serverenv.SentinelMaster,
		SentinelAddrs: serverenv.RedisSentinelAddrs(),
	})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		where := "redis sentinel at " + strings.Join(serverenv.RedisSentinelAddrs(), ",")
		if serverenv.Required() {
			t.Fatalf("%s: %v", where, err)
		}
		t.Skipf("%s: %v", where, err)
	}
	require.Equal(t, failoverAddr, c.Options().Addr, "go-redis's placeholder address")

	s := &Store{client: c}
	var got []server
	require.NoError(t, s.eachServer(ctx, "test", func(ctx context.Context, sv server) error {
		got = append(got, sv)
		return nil
	}))
	require.Len(t, got, 1)
	sv := got[0]
	assert.Equal(t, "", sv.addr)
	assert.Equal(t, "the Sentinel primary", sv.via)
	repl, err := sv.c.Info(ctx, "replication").Result()
	require.NoError(t, err)
	assert.Contains(t, repl, "role:master")

	old := versionCheck(sv, info("redis_version:6.2.14"))
	require.Error(t, old)
	assert.Contains(t, old.Error(), "once/redisstore: redis (the Sentinel primary) reports version 6.2.14;")
	assert.NotContains(t, old.Error(), failoverAddr)
	ev := evictionCheck(ctx, sv, "# Memory\r\nmaxmemory_policy:allkeys-lru\r\n", nil)
	require.Error(t, ev)
	assert.Contains(t, ev.Error(), `once/redisstore: redis (the Sentinel primary) has maxmemory-policy "allkeys-lru";`)
	cm := &ClusterModeError{Client: "*redis.Client", via: sv.via}
	assert.Contains(t, cm.Error(), "once/redisstore: redis (the Sentinel primary) runs in cluster mode")
}

// TestErrorTextsWithoutAddr: a server of unknown address (a
// redis.UniversalClient of another type) reads without a gap.
func TestErrorTextsWithoutAddr(t *testing.T) {
	assert.Equal(t, `once/redisstore: redis has maxmemory-policy "allkeys-lru"; records can be evicted (set it to noeviction)`,
		(&EvictionPolicyError{Policy: "allkeys-lru"}).Error())
	assert.Equal(t, `once/redisstore: redis at a:1 has maxmemory-policy "allkeys-lru"; records can be evicted (set it to noeviction)`,
		(&EvictionPolicyError{Addr: "a:1", Policy: "allkeys-lru"}).Error())
	assert.Equal(t, "once/redisstore: redis runs in cluster mode (cluster_enabled:1) but the client is a *x.Y, which sends every command to one node; pass a *redis.ClusterClient (redis.NewClusterClient)",
		(&ClusterModeError{Client: "*x.Y"}).Error())
}
