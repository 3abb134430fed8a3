package redisstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/internal/testservers"
)

// Servers come from the environment, with local defaults (package
// internal/testservers/serverenv): ONCE_REDIS_ADDR, ONCE_REDIS_CLUSTER_ADDRS,
// ONCE_REDIS_SENTINEL_ADDRS. An unreachable server skips its tests, unless
// ONCE_REQUIRE_SERVERS=1 or CI is set: then it fails them.

// testPrefix isolates this test run's keys; TestMain deletes them at the end.
var testPrefix = func() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "oncetest:" + hex.EncodeToString(b[:]) + ":"
}()

func singleAddr() string     { return testservers.RedisAddr() }
func clusterAddrs() []string { return testservers.RedisClusterAddrs() }
func requireServers() bool   { return testservers.Required() }

var (
	singleOnce, clusterOnce sync.Once
	single                  *redis.Client
	cluster                 *redis.ClusterClient
	singleErr, clusterErr   error
)

func unreachable(tb testing.TB, what string, err error) {
	tb.Helper()
	testservers.Unavailable(tb, what, err)
}

// singleClient returns the shared single-node client, or skips.
func singleClient(tb testing.TB) *redis.Client {
	tb.Helper()
	singleOnce.Do(func() {
		single = redis.NewClient(&redis.Options{Addr: singleAddr(), PoolSize: 64})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		singleErr = single.Ping(ctx).Err()
	})
	if singleErr != nil {
		unreachable(tb, "redis at "+singleAddr(), singleErr)
	}
	return single
}

// clusterClient returns the shared cluster client, or skips.
func clusterClient(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	clusterOnce.Do(func() {
		cluster = redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs(), PoolSize: 64})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		clusterErr = cluster.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return c.Ping(ctx).Err()
		})
		if clusterErr == nil {
			clusterErr = waitClusterOK(ctx, cluster)
		}
	})
	if clusterErr != nil {
		unreachable(tb, "redis cluster at "+strings.Join(clusterAddrs(), ","), clusterErr)
	}
	return cluster
}

func waitClusterOK(ctx context.Context, c *redis.ClusterClient) error {
	for {
		err := c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			info, err := n.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("%s: cluster_state not ok", n.Options().Addr)
			}
			return nil
		})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func newStore(tb testing.TB, c redis.UniversalClient, cfg *redisstore.Config) *redisstore.Store {
	tb.Helper()
	if cfg == nil {
		cfg = &redisstore.Config{}
	}
	if cfg.KeyPrefix == "" {
		cfg.KeyPrefix = testPrefix
	}
	s, err := redisstore.New(context.Background(), c, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestMain(m *testing.M) {
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// cleanup deletes every key of this run from the servers that were used.
func cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	del := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, testPrefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Unlink(ctx, iter.Val())
		}
		return iter.Err()
	}
	if single != nil && singleErr == nil {
		_ = del(ctx, single)
		_ = single.Close()
	}
	if cluster != nil && clusterErr == nil {
		_ = cluster.ForEachMaster(ctx, del)
		_ = cluster.Close()
	}
	if sentinel != nil && sentinelErr == nil {
		_ = del(ctx, sentinel)
		_ = sentinel.Close()
	}
}

func nonDefault(prefix string) *redisstore.Config { return &redisstore.Config{KeyPrefix: prefix} }
