package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/internal/testservers"
)

// The servers come from the shared test environment (internal/testservers):
// ONCE_POSTGRES_URL, ONCE_REDIS_ADDR and ONCE_REDIS_CLUSTER_ADDRS, with
// local defaults. A missing server skips its tests, unless
// ONCE_REQUIRE_SERVERS=1 or CI is set: then they fail.

func unreachable(tb testing.TB, what string, err error) {
	tb.Helper()
	testservers.Unavailable(tb, what, err)
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func postgresURL() string { return testservers.PostgresURL() }

// pgEnv is a PostgreSQL server and a schema of the test's own, dropped at
// the end.
type pgEnv struct {
	url, schema string
	pool        *pgxpool.Pool
}

func (p pgEnv) flags(args ...string) []string {
	return append([]string{"--postgres", p.url, "--schema", p.schema}, args...)
}

func newPG(t *testing.T) pgEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, postgresURL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		unreachable(t, "PostgreSQL at "+postgresURL(), err)
	}
	p := pgEnv{url: postgresURL(), schema: randomName("once_cli_"), pool: pool}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{p.schema}.Sanitize()+" CASCADE")
		pool.Close()
	})
	return p
}

func redisAddr() string { return testservers.RedisAddr() }

func redisClusterAddrs() string { return strings.Join(testservers.RedisClusterAddrs(), ",") }

// redisEnv is a Redis client and a key prefix of the test's own, whose
// keys are deleted at the end.
type redisEnv struct {
	client redis.UniversalClient
	flags0 []string // --redis ADDR or --redis-cluster ADDRS
	prefix string
}

func (r redisEnv) flags(args ...string) []string {
	return append(append(append([]string{}, r.flags0...), "--prefix", r.prefix), args...)
}

func newRedis(t *testing.T, cluster bool) redisEnv {
	t.Helper()
	var r redisEnv
	if cluster {
		r.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(redisClusterAddrs(), ",")})
		r.flags0 = []string{"--redis-cluster", redisClusterAddrs()}
	} else {
		r.client = redis.NewClient(&redis.Options{Addr: redisAddr()})
		r.flags0 = []string{"--redis", redisAddr()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.client.Ping(ctx).Err(); err != nil {
		_ = r.client.Close()
		unreachable(t, "Redis "+strings.Join(r.flags0, " "), err)
	}
	r.prefix = randomName("oncecli:") + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		del := func(ctx context.Context, c *redis.Client) error {
			iter := c.Scan(ctx, 0, r.prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				c.Unlink(ctx, iter.Val())
			}
			return iter.Err()
		}
		if cc, ok := r.client.(*redis.ClusterClient); ok {
			_ = cc.ForEachMaster(ctx, del)
		} else {
			_ = del(ctx, r.client.(*redis.Client))
		}
		_ = r.client.Close()
	})
	return r
}

// syncBuffer is a bytes.Buffer safe to read while run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// result is one in-process run of the command.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr syncBuffer
	code := run(context.Background(), args, &stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// mustRun runs the command and requires exit status 0.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	r := runCLI(t, args...)
	require.Equal(t, exitOK, r.code, "%v\n%s", args, r)
	return r.stdout
}

// getJSON runs get --json and decodes its output.
func getJSON(t *testing.T, flags []string, scope, key string) recordView {
	t.Helper()
	out := mustRun(t, append(append([]string{"--json"}, flags...), "get", scope, key)...)
	var v recordView
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	return v
}
