package redisstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/testservers"
)

func sentinelAddrs() []string { return testservers.RedisSentinelAddrs() }

var (
	sentinelOnce sync.Once
	sentinel     *redis.Client
	sentinelErr  error
)

// sentinelClient returns the shared Sentinel failover client, or skips.
func sentinelClient(tb testing.TB) *redis.Client {
	tb.Helper()
	sentinelOnce.Do(func() {
		sentinel = redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName:    testservers.SentinelMaster,
			SentinelAddrs: sentinelAddrs(),
			PoolSize:      64,
		})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sentinelErr = sentinel.Ping(ctx).Err()
	})
	if sentinelErr != nil {
		unreachable(tb, "redis sentinel at "+strings.Join(sentinelAddrs(), ",")+" (scripts/redis-sentinel.sh start)", sentinelErr)
	}
	return sentinel
}

// TestConformanceSentinel runs the suite through a Sentinel failover
// client: the store works with every redis.UniversalClient shape.
func TestConformanceSentinel(t *testing.T) {
	s := newStore(t, sentinelClient(t), nil)
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}
