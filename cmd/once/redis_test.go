package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends/redisstore"
)

func TestRedis(t *testing.T) {
	for name, cluster := range map[string]bool{"single": false, "cluster": true} {
		t.Run(name, func(t *testing.T) {
			r := newRedis(t, cluster)
			store, err := redisstore.New(context.Background(), r.client, &redisstore.Config{
				KeyPrefix: r.prefix, EvictionPolicyCheck: redisstore.EvictionIgnore,
			})
			require.NoError(t, err)
			t.Run("Lifecycle", func(t *testing.T) { lifecycle(t, store, r.flags) })
			t.Run("ResolveHeld", func(t *testing.T) { held(t, store, r.flags) })
			t.Run("Steps", func(t *testing.T) { steps(t, store, r.flags) })
			t.Run("Operator", func(t *testing.T) {
				r := newRedis(t, cluster) // a keyspace of its own: it counts records
				store, err := redisstore.New(context.Background(), r.client, &redisstore.Config{
					KeyPrefix: r.prefix, EvictionPolicyCheck: redisstore.EvictionIgnore,
				})
				require.NoError(t, err)
				operator(t, store, r.flags)
			})
			t.Run("Check", func(t *testing.T) {
				want := exitOK
				if store.CheckEvictionPolicy(context.Background()) != nil {
					want = exitFailure
				}
				res := runCLI(t, r.flags("--json", "check")...)
				require.Equal(t, want, res.code, "%s", res)
				var c checkResult
				require.NoError(t, json.Unmarshal([]byte(res.stdout), &c), res.stdout)
				assert.Equal(t, "redis", c.Store)
				assert.Equal(t, want == exitOK, c.OK)
			})
		})
	}
}

// TestRedisFlagOnAClusterNode: --redis given a node of a Redis Cluster
// fails (the store refuses a single-node client there) and names the flag
// to use instead.
func TestRedisFlagOnAClusterNode(t *testing.T) {
	r := newRedis(t, true)
	node := strings.Split(redisClusterAddrs(), ",")[0]
	res := runCLI(t, "--redis", node, "--prefix", r.prefix, "get", "s", "k")
	assert.Equal(t, exitFailure, res.code, "%s", res)
	assert.Contains(t, res.stderr, "cluster mode")
	assert.Contains(t, res.stderr, "--redis-cluster "+node)
}

// TestRedisUnreachable: a Redis that cannot be reached is reported with
// the reason, in words that quote neither the URL's password nor the
// address (it said "redis unavailable" alone).
func TestRedisUnreachable(t *testing.T) {
	for _, tc := range []struct{ addr, reason string }{
		{"redis://admin:hunter2@127.0.0.1:1/0", "connection refused"},
		{"no-such-host.invalid:6379", "host not found"},
	} {
		r := runCLI(t, "--redis", tc.addr, "get", "s", "k")
		assert.Equal(t, exitFailure, r.code, "%s", r)
		assert.Equal(t, "once/redisstore: version check: once/redisstore: redis unavailable: "+tc.reason+"\n", r.stderr)
		for _, leak := range []string{"hunter2", "admin", "127.0.0.1", "no-such-host"} {
			assert.NotContains(t, r.stderr+r.stdout, leak)
		}
	}
}
