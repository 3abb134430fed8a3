package main

import (
	"bytes"
	"context"
	"fmt"
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

// rawRedisTarget is the seed's mechanism written minimally against
// go-redis, one string key per record: a claim is SET key pending NX GET
// PX lease (it returns the existing value, or nil when it set ours), a
// completion SET key completed PX retention (unfenced, like the seed's
// UPDATE). A replay, an in progress and a mismatch are the claim alone:
// its GET returns the record, whose first byte tells pending from
// completed and whose fingerprint decides the mismatch; a replay decodes
// the stored payment, and a first execution runs charge and encodes it
// (rawResult, rawReplay), as once.Do does. No Lua, no owner check, no
// notification.
func rawRedisTarget(ctx context.Context, c *redis.Client, prefix string) (*target, error) {
	t := &target{}
	record := func(state byte, fp, outcome []byte) string {
		return string(append(append([]byte{state, byte(len(fp))}, fp...), outcome...))
	}
	claim := func(ctx context.Context, key string, fp []byte, leaseD time.Duration) (old string, won bool, err error) {
		t.trips.Add(1)
		old, err = c.SetArgs(ctx, key, record('p', fp, nil), redis.SetArgs{Mode: "NX", Get: true, TTL: leaseD}).Result()
		if err == redis.Nil {
			return "", true, nil
		}
		return old, false, err
	}
	first := func(ctx context.Context, key string) error {
		if _, won, err := claim(ctx, key, fpA, lease); err != nil || !won {
			return fmt.Errorf("raw claim: %v %v", err, won)
		}
		body, err := rawResult(ctx)
		if err != nil {
			return err
		}
		t.trips.Add(1)
		if err := c.Set(ctx, key, record('c', fpA, body), retention).Err(); err != nil {
			return fmt.Errorf("raw complete: %w", err)
		}
		return nil
	}
	hot, held := prefix+hotKey, prefix+pendingKey
	if err := first(ctx, hot); err != nil {
		return nil, err
	}
	if _, won, err := claim(ctx, held, fpA, holdLease); err != nil || !won {
		return nil, fmt.Errorf("seed in-progress key: %v %v", err, won)
	}
	find := func(ctx context.Context, key string, fp []byte, state byte) error {
		old, won, err := claim(ctx, key, fp, lease)
		if err != nil || won || len(old) < 2 || old[0] != state || len(old) < 2+int(old[1]) {
			return fmt.Errorf("raw claim of %s: %v %v %q", key, err, won, old)
		}
		match := old[2:2+int(old[1])] == string(fp)
		if match != bytes.Equal(fp, fpA) {
			return fmt.Errorf("raw claim of %s: fingerprint match %v", key, match)
		}
		if match && state == 'c' {
			return rawReplay([]byte(old[2+int(old[1]):]))
		}
		return nil
	}
	var keys keySeq
	t.ops[pathFirst] = func(ctx context.Context) error { return first(ctx, prefix+keys.next("")) }
	t.ops[pathReplay] = func(ctx context.Context) error { return find(ctx, hot, fpA, 'c') }
	t.ops[pathInProgress] = func(ctx context.Context) error { return find(ctx, held, fpA, 'p') }
	t.ops[pathMismatch] = func(ctx context.Context) error { return find(ctx, hot, fpB, 'c') }
	return t, nil
}
