package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/redisstore"
)

// scaleRedis writes completed records with a 100-byte outcome, a SHA-256
// fingerprint, a 32-digit owner token and a UUID key through the store,
// and reports MEMORY USAGE of one record and the growth of used_memory
// per record (noisy: the server is shared).
func scaleRedis(ctx context.Context, w, log io.Writer) error {
	c, err := openRedis(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	prefix := "once-bench:" + runID() + ":"
	defer deletePrefix(context.WithoutCancel(ctx), c, prefix)
	s, err := redisstore.New(ctx, c, &redisstore.Config{KeyPrefix: prefix, EvictionPolicyCheck: redisstore.EvictionIgnore})
	if err != nil {
		return err
	}
	fp := sha256.Sum256([]byte("request"))
	value := []byte(strings.Repeat("v", 100))
	const scope = "tenant-42"
	uuid := func() string {
		t := token()
		return t[:8] + "-" + t[8:12] + "-" + t[12:16] + "-" + t[16:20] + "-" + t[20:]
	}
	used0, err := usedMemory(ctx, c)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	var sampleKey string
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < redisRecords; i += 16 {
				key, owner := uuid(), token()
				r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Fingerprint: fp[:], Lease: time.Minute, Retention: time.Hour})
				if err == nil && !r.Claimed {
					err = fmt.Errorf("not claimed")
				}
				if err == nil {
					_, err = s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: value, Retention: time.Hour})
				}
				if err != nil {
					errs <- err
					return
				}
				if i == 0 {
					sampleKey = prefix + "{" + strconv.Itoa(len(scope)) + ":" + scope + ":" + key + "}"
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	used1, err := usedMemory(ctx, c)
	if err != nil {
		return err
	}
	usage, err := c.MemoryUsage(ctx, sampleKey, 0).Result()
	if err != nil {
		return err
	}
	strlen, _ := c.StrLen(ctx, sampleKey).Result()
	fmt.Fprintf(log, "redis: wrote %d records\n", redisRecords)
	fmt.Fprintf(w, "- MEMORY USAGE of one completed record (100-byte outcome, 32-byte fingerprint, 32-character owner, UUID key, TTL): **%d bytes** (value string %d bytes).\n", usage, strlen)
	fmt.Fprintf(w, "- INFO memory used_memory grew by %.0f bytes per record over %d records (includes the main dictionary and expires entries; the server is shared, so this figure is noisier).\n\n",
		float64(used1-used0)/float64(redisRecords), redisRecords)
	return nil
}

func usedMemory(ctx context.Context, c *redis.Client) (int64, error) {
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no used_memory in INFO memory")
}
