package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// TestClusterFailover runs claims and completions from many goroutines on a
// shared set of keys while one primary hands over to its replica with a
// graceful CLUSTER FAILOVER. Afterwards every acknowledged completion must
// read back as completed with its outcome, and no key may have been
// claimed by two owners.
//
// A graceful (non-FORCE) CLUSTER FAILOVER pauses writes on the primary and
// promotes the replica only once it has caught up, so no acknowledged write
// is lost: this test is deterministic for that kind. An unplanned failover
// (a crashed primary, CLUSTER FAILOVER FORCE or TAKEOVER) can lose the last
// writes the primary acknowledged, because replication is asynchronous;
// the store does not issue WAIT, and even WAIT would not make Redis a
// consensus system. See README.md.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cluster failover is the full loop's")
	}
	c := clusterClient(t)
	s := newStore(t, c, nil)
	ctx := context.Background()
	scope := backendtest.Scope(t)

	const nkeys, workers = 3000, 16
	keys := make([]string, nkeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}

	var (
		mu       sync.Mutex
		claimers = map[string][]string{} // key -> owners that got Claimed
		acked    = map[string]string{}   // key -> acknowledged outcome
		errs     atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, i := range rand.Perm(nkeys) {
				if stop.Load() {
					return
				}
				key, owner := keys[i], backendtest.Token()
				r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: owner, Lease: time.Hour, Retention: time.Hour})
				if err != nil {
					errs.Add(1)
					continue
				}
				if !r.Claimed {
					continue
				}
				mu.Lock()
				claimers[key] = append(claimers[key], owner)
				mu.Unlock()
				ok, err := s.Complete(ctx, backends.CompleteParams{Scope: scope, Key: key, Owner: owner, Outcome: []byte(owner), Retention: time.Hour})
				if err != nil {
					errs.Add(1)
					continue
				}
				if ok {
					mu.Lock()
					acked[key] = owner
					mu.Unlock()
				}
			}
		}()
	}

	time.Sleep(300 * time.Millisecond)
	replica, primary := replicaOf(t, c)
	t.Logf("CLUSTER FAILOVER on %s (replica of %s) under load", replica.Options().Addr, primary)
	require.NoError(t, replica.Do(ctx, "cluster", "failover").Err())
	deadline := time.Now().Add(10 * time.Second)
	for {
		role, err := replica.Do(ctx, "role").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			break
		}
		require.True(t, time.Now().Before(deadline), "replica was not promoted")
		time.Sleep(50 * time.Millisecond)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, waitClusterOK(waitCtx, c))
	mu.Lock()
	ackedAtFailover := len(acked)
	mu.Unlock()
	time.Sleep(500 * time.Millisecond) // keep the load on the new topology
	stop.Store(true)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, len(acked), ackedAtFailover, "the load must go on after the failover")
	t.Logf("%d keys claimed, %d completions acknowledged, %d operations failed during the failover", len(claimers), len(acked), errs.Load())
	require.NotEmpty(t, acked)
	for key, owners := range claimers {
		assert.Len(t, owners, 1, "key %s claimed by several owners", key)
	}
	lost := 0
	for key, outcome := range acked {
		r, err := s.Claim(ctx, backends.ClaimParams{Scope: scope, Key: key, Owner: backendtest.Token(), Lease: time.Hour, Retention: time.Hour})
		require.NoError(t, err)
		if r.Claimed || r.Existing.State != backends.StateCompleted || string(r.Existing.Outcome) != outcome {
			lost++
		}
	}
	assert.Zero(t, lost, "acknowledged completions lost or changed")
}

// replicaOf returns a client for a replica and the address of its primary.
func replicaOf(t *testing.T, c *redis.ClusterClient) (*redis.Client, string) {
	t.Helper()
	ctx := context.Background()
	nodes, err := c.ClusterNodes(ctx).Result()
	require.NoError(t, err)
	addrOf := map[string]string{} // node id -> host:port
	type link struct{ addr, primaryID string }
	var replicas []link
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || strings.Contains(f[2], "fail") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addrOf[f[0]] = addr
		if strings.Contains(f[2], "slave") && f[7] == "connected" {
			replicas = append(replicas, link{addr, f[3]})
		}
	}
	if len(replicas) == 0 {
		t.Skip("the cluster has no connected replica; scripts/redis-cluster.sh starts one per primary")
	}
	r := replicas[rand.IntN(len(replicas))]
	rc := redis.NewClient(&redis.Options{Addr: r.addr})
	t.Cleanup(func() { _ = rc.Close() })
	return rc, addrOf[r.primaryID]
}
