package main

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

func redisAddr() string { return serverenv.RedisAddr() }

func openRedis(ctx context.Context) (*redis.Client, error) {
	c := redis.NewClient(&redis.Options{Addr: redisAddr()})
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// deletePrefix removes every key under prefix (SCAN + UNLINK).
func deletePrefix(ctx context.Context, c *redis.Client, prefix string) {
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 1000 {
			c.Unlink(ctx, batch...)
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		c.Unlink(ctx, batch...)
	}
}

// setupRedis returns the library over redisstore and its raw baseline
// (see rawRedisTarget) on the same client.
func setupRedis(ctx context.Context, id string) (_ *suite, err error) {
	c, err := openRedis(ctx)
	if err != nil {
		return nil, err
	}
	prefix := "once-bench:" + id + ":"
	cleanup := func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		deletePrefix(cctx, c, prefix)
		c.Close()
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	s, err := redisstore.New(ctx, c, &redisstore.Config{KeyPrefix: prefix, EvictionPolicyCheck: redisstore.EvictionIgnore})
	if err != nil {
		return nil, err
	}
	lib, err := libraryTarget(ctx, s, "lib-"+id, nil)
	if err != nil {
		return nil, err
	}
	cached, err := cachedLibraryTarget(ctx, s, id)
	if err != nil {
		return nil, err
	}
	raw, err := rawRedisTarget(ctx, c, prefix+"raw:")
	if err != nil {
		return nil, err
	}
	return &suite{lib: lib, cached: cached, raw: raw, cleanup: cleanup}, nil
}
