package redisstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/redisstore"
)

func TestConformanceSingle(t *testing.T) {
	s := newStore(t, singleClient(t), nil)
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

func TestConformanceCluster(t *testing.T) {
	s := newStore(t, clusterClient(t), nil)
	backendtest.Run(t, func(testing.TB) backends.Store { return s })
}

func TestEvictionPolicy(t *testing.T) {
	for name, c := range map[string]func(testing.TB) redis.UniversalClient{
		"single":  func(tb testing.TB) redis.UniversalClient { return singleClient(tb) },
		"cluster": func(tb testing.TB) redis.UniversalClient { return clusterClient(tb) },
	} {
		t.Run(name, func(t *testing.T) {
			client := c(t)
			policy, err := client.ConfigGet(context.Background(), "maxmemory-policy").Result()
			require.NoError(t, err)
			if policy["maxmemory-policy"] != "noeviction" {
				t.Skipf("server runs maxmemory-policy %q", policy["maxmemory-policy"])
			}
			s := newStore(t, client, &redisstore.Config{EvictionPolicyCheck: redisstore.EvictionRefuse})
			assert.NoError(t, s.CheckEvictionPolicy(context.Background()))
		})
	}
}

func TestErrors(t *testing.T) {
	s := newStore(t, singleClient(t), nil)
	ctx := context.Background()

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Claim(cancelled, backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Second, Retention: time.Second})
	require.ErrorIs(t, err, context.Canceled)
	var e *redisstore.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "claim", e.Op)

	_, err = s.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "", Lease: time.Second, Retention: time.Second})
	assert.ErrorIs(t, err, redisstore.ErrInvalid)

	// A key of another type under the store's prefix: an error reply,
	// translated, never a raw driver error.
	other := newStore(t, singleClient(t), &redisstore.Config{KeyPrefix: testPrefix + "wrongtype:"})
	require.NoError(t, singleClient(t).HSet(ctx, testPrefix+"wrongtype:{1:s:k}", "f", "v").Err())
	_, err = other.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Second, Retention: time.Second})
	require.ErrorIs(t, err, redisstore.ErrServer)
	var rerr redis.Error
	assert.False(t, errors.As(err, &rerr), "a go-redis error escaped: %v", err)

	// A closed client.
	closed := redis.NewClient(&redis.Options{Addr: singleAddr()})
	cs := newStore(t, closed, nil)
	require.NoError(t, closed.Close())
	_, err = cs.Claim(ctx, backends.ClaimParams{Scope: "s", Key: "k", Owner: "o", Lease: time.Second, Retention: time.Second})
	assert.ErrorIs(t, err, backends.ErrClosed)

	// Nothing listens: unreachable.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer down.Close()
	_, err = redisstore.New(ctx, down, nil)
	assert.ErrorIs(t, err, redisstore.ErrUnavailable)
}

func TestNewDoesNotCloseClient(t *testing.T) {
	c := singleClient(t)
	newStore(t, c, nil)
	require.NoError(t, c.Ping(context.Background()).Err())
}

// TestNewChecksTheServerVersion: New accepts the test servers (Redis 7),
// whose INFO server reports a version of 7.0 or later, on a single node
// and on every primary of a Cluster.
func TestNewChecksTheServerVersion(t *testing.T) {
	for name, c := range map[string]func(testing.TB) redis.UniversalClient{
		"single":  func(tb testing.TB) redis.UniversalClient { return singleClient(tb) },
		"cluster": func(tb testing.TB) redis.UniversalClient { return clusterClient(tb) },
	} {
		t.Run(name, func(t *testing.T) {
			client := c(t)
			ctx := context.Background()
			info, err := client.Info(ctx, "server").Result()
			require.NoError(t, err)
			require.Regexp(t, `(?m)^redis_version:([7-9]|[1-9][0-9]+)\.`, info, "the test server is Redis 7 or later")
			_, err = redisstore.New(ctx, client, nil)
			require.NoError(t, err)
		})
	}
}

// TestVersionCheckIsNewsAlone: New sends INFO (one round trip of its
// own), and the operations after it send no INFO.
func TestVersionCheckIsNewsAlone(t *testing.T) {
	client, n := countingClient(t)
	ctx := context.Background()
	s, err := redisstore.New(ctx, client, &redisstore.Config{EvictionPolicyCheck: redisstore.EvictionIgnore, KeyPrefix: "once-version:"})
	require.NoError(t, err)
	sent := n.take()
	require.NotEmpty(t, sent)
	assert.Equal(t, "info", sent[0], "New checks the version first")
	p := backends.ClaimParams{Scope: "s", Key: "version-" + time.Now().Format(time.RFC3339Nano), Owner: "o", Lease: time.Second, Retention: time.Second}
	r, err := s.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: p.Scope, Key: p.Key, Owner: p.Owner, Outcome: []byte("v"), Retention: time.Second})
	require.NoError(t, err)
	require.True(t, ok)
	assert.NotContains(t, n.take(), "info", "no operation repeats the check")
}
