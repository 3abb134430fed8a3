package main

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/internal/redislua"
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

// setupRedis returns the library over redisstore and its baseline:
// EVALSHA of the backend's own claim and complete scripts (internal/redislua), through
// go-redis's Script.Run on the same client, with the same key layout and
// arguments.
func setupRedis(ctx context.Context, id string) (lib, raw *target, cleanup func(), err error) {
	c, err := openRedis(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	prefix := "once-bench:" + id + ":"
	cleanup = func() {
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
		return nil, nil, nil, err
	}
	if lib, err = libraryTarget(ctx, s, "lib-"+id); err != nil {
		return nil, nil, nil, err
	}
	if raw, err = rawRedisTarget(ctx, c, prefix, "raw-"+id); err != nil {
		return nil, nil, nil, err
	}
	return lib, raw, cleanup, nil
}

func rawRedisTarget(ctx context.Context, c *redis.Client, prefix, scope string) (*target, error) {
	t := &target{}
	claimScript, completeScript := redis.NewScript(redislua.Claim), redis.NewScript(redislua.Complete)
	for _, sc := range []*redis.Script{claimScript, completeScript} {
		if err := sc.Load(ctx, c).Err(); err != nil {
			return nil, err
		}
	}
	// The record key, as the backend builds it (no escaping needed: the
	// benchmark's scopes and keys contain neither "%" nor "}").
	key := func(k string) string {
		return prefix + "{" + strconv.Itoa(len(scope)) + ":" + scope + ":" + k + "}"
	}
	leaseMS, retentionMS, holdMS := lease.Milliseconds(), retention.Milliseconds(), holdLease.Milliseconds()
	claim := func(ctx context.Context, rk string, fp []byte, owner string, leaseMS int64) (any, error) {
		t.trips.Add(1)
		return claimScript.Run(ctx, c, []string{rk}, fp, owner, leaseMS, retentionMS).Result()
	}
	first := func(ctx context.Context, rk string) error {
		owner := token()
		if v, err := claim(ctx, rk, fpA, owner, leaseMS); err != nil || v != int64(1) {
			return fmt.Errorf("raw claim: %v %v", err, v)
		}
		t.trips.Add(1)
		if n, err := completeScript.Run(ctx, c, []string{rk}, owner, storedOutcome, retentionMS, "PUBLISH").Int64(); err != nil || n != 1 {
			return fmt.Errorf("raw complete: %v %v", err, n)
		}
		return nil
	}
	hot, pending := key(hotKey), key(pendingKey)
	if err := first(ctx, hot); err != nil {
		return nil, err
	}
	if v, err := claim(ctx, pending, fpA, token(), holdMS); err != nil || v != int64(1) {
		return nil, fmt.Errorf("seed in-progress key: %v %v", err, v)
	}
	var keys keySeq
	t.ops[pathFirst] = func(ctx context.Context) error { return first(ctx, key(keys.next(""))) }
	// A completed record comes back whole: 'c' len(fp) fp len(owner) owner
	// outcome; a pending one as {fingerprint, lease ms left}.
	completedFP := func(v any) ([]byte, bool) {
		s, ok := v.(string)
		if !ok || len(s) < 3 || s[0] != 'c' || len(s) < 2+int(s[1]) {
			return nil, false
		}
		return []byte(s[2 : 2+int(s[1])]), true
	}
	t.ops[pathReplay] = func(ctx context.Context) error {
		v, err := claim(ctx, hot, fpA, token(), leaseMS)
		if fp, ok := completedFP(v); err != nil || !ok || !bytes.Equal(fp, fpA) {
			return fmt.Errorf("raw replay: %v %v", err, v)
		}
		return nil
	}
	t.ops[pathMismatch] = func(ctx context.Context) error {
		v, err := claim(ctx, hot, fpB, token(), leaseMS)
		if fp, ok := completedFP(v); err != nil || !ok || bytes.Equal(fp, fpB) {
			return fmt.Errorf("raw mismatch: %v %v", err, v)
		}
		return nil
	}
	t.ops[pathInProgress] = func(ctx context.Context) error {
		v, err := claim(ctx, pending, fpA, token(), leaseMS)
		if a, ok := v.([]any); err != nil || !ok || len(a) != 2 {
			return fmt.Errorf("raw in progress: %v %v", err, v)
		}
		return nil
	}
	return t, nil
}
