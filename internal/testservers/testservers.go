// Package testservers is the one shared test environment of the
// repository: it connects tests to the real PostgreSQL and Redis servers,
// so that the backends, the core, the HTTP middleware, the fault suite,
// the CLI and the examples are tested on every store, never on mocks.
//
// Where the servers are comes from package serverenv (environment
// variables with local defaults). Without a server a test is skipped,
// unless ONCE_REQUIRE_SERVERS=1 or CI is set, where it fails: in CI a
// missing server is a failure (Unavailable).
package testservers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// Defaults when the environment names no server (see serverenv).
const (
	DefaultPostgresURL = serverenv.DefaultPostgresURL
	DefaultRedisAddr   = serverenv.DefaultRedisAddr
	SentinelMaster     = serverenv.SentinelMaster
)

// Where the servers are, from the environment (see serverenv).
var (
	PostgresURL        = serverenv.PostgresURL
	RedisAddr          = serverenv.RedisAddr
	RedisClusterAddrs  = serverenv.RedisClusterAddrs
	RedisSentinelAddrs = serverenv.RedisSentinelAddrs
	// Required reports whether a missing server must fail the test.
	Required = serverenv.Required
)

// Unavailable ends tb because the server what cannot be used: it fails
// tb when Required, and skips it otherwise.
func Unavailable(tb testing.TB, what string, err error) {
	tb.Helper()
	msg := fmt.Sprintf("%s is not usable: %v (start it or set its environment variable: see package serverenv)", what, err)
	if Required() {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// Suffix returns a random suffix for table names and key prefixes.
func Suffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Pool returns a pool on the test server, closed when tb ends.
func Pool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, PostgresURL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err != nil {
		if pool != nil {
			pool.Close()
		}
		Unavailable(tb, "PostgreSQL at "+PostgresURL(), err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// PostgresStore returns a PostgreSQL store on its own freshly migrated
// table, dropped when tb ends, and its pool.
func PostgresStore(tb testing.TB) (*postgres.Store, *pgxpool.Pool) {
	tb.Helper()
	pool := Pool(tb)
	cfg := &postgres.Config{Table: "once_t_" + Suffix()}
	ctx := context.Background()
	s, err := postgres.New(pool, cfg)
	if err != nil {
		tb.Fatalf("postgres.New: %v", err)
	}
	if err := s.Migrate(ctx); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	tb.Cleanup(func() {
		for _, t := range []string{cfg.Table, cfg.Table + "_migrations"} {
			_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{"public", t}.Sanitize())
		}
	})
	return s, pool
}

// MigratePostgres migrates the records table of cfg on db, for tests that
// need the table before, or without, a Store of their own.
func MigratePostgres(ctx context.Context, db postgres.DB, cfg *postgres.Config) error {
	s, err := postgres.New(db, cfg)
	if err != nil {
		return err
	}
	return s.Migrate(ctx)
}

// RedisClient returns a client of the test server, closed when tb ends.
func RedisClient(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: RedisAddr()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		Unavailable(tb, "Redis at "+RedisAddr(), err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// RedisStore returns a Redis store under its own random key prefix, whose
// keys are deleted when tb ends.
func RedisStore(tb testing.TB) *redisstore.Store {
	tb.Helper()
	c := RedisClient(tb)
	prefix := "once-t-" + Suffix() + ":"
	s, err := redisstore.New(context.Background(), c, &redisstore.Config{KeyPrefix: prefix, EvictionPolicyCheck: redisstore.EvictionIgnore})
	if err != nil {
		tb.Fatalf("redisstore.New: %v", err)
	}
	tb.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			_ = c.Del(ctx, iter.Val()).Err()
		}
	})
	return s
}

// Stores returns one fresh store of every backend, by name: "memory",
// "postgres" and "redis".
func Stores() map[string]func(testing.TB) backends.Store {
	return map[string]func(testing.TB) backends.Store{
		"memory":   func(testing.TB) backends.Store { return memory.New(nil) },
		"postgres": func(tb testing.TB) backends.Store { s, _ := PostgresStore(tb); return s },
		"redis":    func(tb testing.TB) backends.Store { return RedisStore(tb) },
	}
}

// ListerStores returns one fresh store of every backend that implements
// backends.Lister (the stores a reconciler walks), by name: Stores' and
// "redis-cluster".
func ListerStores() map[string]func(testing.TB) backends.Store {
	stores := Stores()
	stores["redis-cluster"] = RedisClusterStore
	return stores
}

// RedisClusterStore returns a fresh Redis store over the cluster named by
// RedisClusterAddrs, its keys under a fresh prefix, deleted when tb ends.
func RedisClusterStore(tb testing.TB) backends.Store {
	tb.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: RedisClusterAddrs()})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		Unavailable(tb, "Redis Cluster", err)
	}
	prefix := "once-t-" + Suffix() + ":"
	s, err := redisstore.New(ctx, c, &redisstore.Config{KeyPrefix: prefix, EvictionPolicyCheck: redisstore.EvictionIgnore})
	if err != nil {
		_ = c.Close()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx := context.Background()
		_ = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			iter := n.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				_ = n.Del(ctx, iter.Val()).Err()
			}
			return iter.Err()
		})
		_ = c.Close()
	})
	return s
}
