package redisstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
	"github.com/stagedoor/once/backends/redisstore"
)

// connections counts the server connections named name, and those of
// them in Pub/Sub mode, on every primary of a Cluster.
func connections(t *testing.T, admin redis.UniversalClient, name string) (all, pubsub int) {
	t.Helper()
	count := func(ctx context.Context, c *redis.Client) (int, int) {
		list, err := c.ClientList(ctx).Result()
		require.NoError(t, err)
		all, pubsub := 0, 0
		for _, line := range strings.Split(list, "\n") {
			if !strings.Contains(line, " name="+name+" ") {
				continue
			}
			all++
			for _, f := range strings.Fields(line) {
				if v, ok := strings.CutPrefix(f, "flags="); ok && strings.Contains(v, "P") {
					pubsub++
				}
			}
		}
		return all, pubsub
	}
	ctx := t.Context()
	if cc, ok := admin.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		require.NoError(t, cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			a, p := count(ctx, c)
			mu.Lock()
			defer mu.Unlock()
			all, pubsub = all+a, pubsub+p
			return nil
		}))
		return all, pubsub
	}
	return count(ctx, admin.(*redis.Client))
}

// killPubSub kills the Pub/Sub connections named name (ours alone: the
// server is shared).
func killPubSub(t *testing.T, admin *redis.Client, name string) int {
	t.Helper()
	ctx := t.Context()
	list, err := admin.ClientList(ctx).Result()
	require.NoError(t, err)
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") || !strings.Contains(line, "flags=P") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				require.NoError(t, admin.Do(ctx, "CLIENT", "KILL", "ID", id).Err())
				killed++
			}
		}
	}
	return killed
}

// TestWatchSharesConnections measures issue 13 (11): 1 000 concurrent
// waiters on distinct keys of one store use a bounded number of server
// connections (CLIENT LIST), and each is woken by its own key's change.
func TestWatchSharesConnections(t *testing.T) {
	// Claims are pipelines, which go-redis serves from its separate
	// pipeline pool (PipelinePoolSize connections per primary).
	const waiters, poolSize, pipelinePoolSize = 1000, 8, 4
	for name, c := range map[string]struct {
		admin     func(testing.TB) redis.UniversalClient
		client    func(name string) redis.UniversalClient
		primaries int
	}{
		"single": {
			func(tb testing.TB) redis.UniversalClient { return singleClient(tb) },
			func(name string) redis.UniversalClient {
				return redis.NewClient(&redis.Options{Addr: singleAddr(), ClientName: name, PoolSize: poolSize, PipelinePoolSize: pipelinePoolSize})
			}, 1,
		},
		"cluster": {
			func(tb testing.TB) redis.UniversalClient { return clusterClient(tb) },
			func(name string) redis.UniversalClient {
				return redis.NewClusterClient(&redis.ClusterOptions{Addrs: clusterAddrs(), ClientName: name, PoolSize: poolSize, PipelinePoolSize: pipelinePoolSize})
			}, 3,
		},
	} {
		t.Run(name, func(t *testing.T) {
			admin := c.admin(t)
			clientName := "oncewatch" + strings.ReplaceAll(backendtest.Token()[:12], "-", "")
			client := c.client(clientName)
			t.Cleanup(func() { _ = client.Close() })
			s := newStore(t, client, &redisstore.Config{EvictionPolicyCheck: redisstore.EvictionIgnore})
			scope, ctx := backendtest.Scope(t), t.Context()

			chans := make([]<-chan struct{}, waiters)
			owners := make([]string, waiters)
			var wg sync.WaitGroup
			errs := make(chan error, waiters)
			for i := range waiters {
				owners[i] = backendtest.Token()
				wg.Go(func() {
					key := "k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i)
					if _, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owners[i], Lease: time.Minute, Retention: time.Hour}); err != nil {
						errs <- err
						return
					}
					changed, stop, err := s.Watch(ctx, scope, key)
					if err != nil {
						errs <- err
						return
					}
					t.Cleanup(stop)
					chans[i] = changed
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			all, pubsub := connections(t, admin, clientName)
			t.Logf("%s: %d concurrent waiters: %d server connections, %d of them Pub/Sub (pool size %d, pipeline pool size %d, %d primaries)",
				name, waiters, all, pubsub, poolSize, pipelinePoolSize, c.primaries)
			require.LessOrEqual(t, pubsub, c.primaries, "waiters share one Pub/Sub connection per primary")
			require.LessOrEqual(t, all, c.primaries*(poolSize+pipelinePoolSize+1), "and nothing else grows with the waiters")

			for i := range waiters {
				key := "k" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + itoa(i)
				ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: owners[i], Outcome: []byte("v"), Retention: time.Hour})
				require.NoError(t, err)
				require.True(t, ok)
			}
			for i, ch := range chans {
				select {
				case <-ch:
				case <-time.After(20 * time.Second):
					t.Fatalf("waiter %d was not woken", i)
				}
			}
		})
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

// TestWatchSurvivesConnectionLoss kills the store's shared Pub/Sub
// connection (our own, by name): every waiter is woken (a change may have
// been missed while it was down), and watching again works on a fresh
// connection.
func TestWatchSurvivesConnectionLoss(t *testing.T) {
	admin := singleClient(t)
	clientName := "oncewatchkill" + backendtest.Token()[:12]
	client := redis.NewClient(&redis.Options{Addr: singleAddr(), ClientName: clientName})
	t.Cleanup(func() { _ = client.Close() })
	s := newStore(t, client, nil)
	scope, owner, ctx := backendtest.Scope(t), backendtest.Token(), t.Context()
	_, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: "k", Owner: owner, Lease: time.Minute, Retention: time.Hour})
	require.NoError(t, err)

	changed, stop, err := s.Watch(ctx, scope, "k")
	require.NoError(t, err)
	defer stop()
	require.Equal(t, 1, killPubSub(t, admin, clientName), "the store's one Pub/Sub connection")
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("a lost subscriber connection did not wake its waiter")
	}

	changed, stop2, err := s.Watch(ctx, scope, "k")
	require.NoError(t, err)
	defer stop2()
	ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "k", Owner: owner, Outcome: []byte("v"), Retention: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("watching on the fresh connection missed a change")
	}
}
