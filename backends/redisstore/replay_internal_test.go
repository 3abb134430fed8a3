package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// TestReplayWritesNothing: a replay's SET … NX GET finds the key and
// writes nothing. The record keeps its value and its expiry (a write
// would reset the PTTL upward), and the server's count of changes
// (rdb_changes_since_last_save) stays put over a window of replays; other
// tests share the server, so one clean window out of many short ones is
// enough, while a replay that wrote would dirty every one.
func TestReplayWritesNothing(t *testing.T) {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: serverenv.RedisAddr()})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		if serverenv.Required() {
			t.Fatalf("redis at %s: %v", serverenv.RedisAddr(), err)
		}
		t.Skipf("redis at %s: %v", serverenv.RedisAddr(), err)
	}
	s, err := New(ctx, c, &Config{KeyPrefix: "oncetest-replay:", EvictionPolicyCheck: EvictionIgnore})
	require.NoError(t, err)
	scope := backendtest.Scope(t)
	key := s.key(scope, "hot")
	t.Cleanup(func() { c.Del(context.Background(), key) })
	p := backends.ClaimParams{Scope: scope, Key: "hot", Owner: backendtest.Token(), Fingerprint: []byte("fp"), Lease: time.Minute, Retention: time.Hour}
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "hot", Owner: p.Owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)

	replay := func() {
		p.Owner = backendtest.Token()
		r, err := s.Claim(ctx, p)
		require.NoError(t, err)
		require.Equal(t, backends.StateCompleted, r.Existing.State, "a replay")
	}
	value, err := c.Get(ctx, key).Result()
	require.NoError(t, err)
	ttl, err := c.PTTL(ctx, key).Result()
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond) // so that a write's fresh PX would read higher
	for range 100 {
		replay()
	}
	after, err := c.Get(ctx, key).Result()
	require.NoError(t, err)
	require.Equal(t, value, after, "a replay must not rewrite the record")
	ttlAfter, err := c.PTTL(ctx, key).Result()
	require.NoError(t, err)
	require.Less(t, ttlAfter, ttl, "a replay must not reset the record's expiry")

	changes := func() string {
		info, err := c.Info(ctx, "persistence").Result()
		require.NoError(t, err)
		for line := range strings.Lines(info) {
			if strings.HasPrefix(line, "rdb_changes_since_last_save:") {
				return strings.TrimSpace(line)
			}
		}
		t.Fatal("INFO persistence has no rdb_changes_since_last_save")
		return ""
	}
	clean := false
	for range 40 {
		from := changes()
		for range 10 {
			replay()
		}
		if changes() == from {
			clean = true
			break
		}
	}
	require.True(t, clean, "replays changed the server's dataset on every attempt")
}
