package adaptertest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/internal/testservers"
)

// StoreSpec names a store that a test creates and its workers open: a
// PostgreSQL table or a Redis key prefix of its own.
type StoreSpec struct {
	Kind string // "postgres" or "redis"
	Name string // the table or the key prefix
}

// NewStoreSpec creates a fresh store of kind, removed when tb ends.
func NewStoreSpec(tb testing.TB, kind string) StoreSpec {
	tb.Helper()
	ctx := context.Background()
	switch kind {
	case "postgres":
		pool := testservers.Pool(tb)
		spec := StoreSpec{Kind: kind, Name: "once_w_" + testservers.Suffix()}
		if err := testservers.MigratePostgres(ctx, pool, &postgres.Config{Table: spec.Name}); err != nil {
			tb.Fatalf("migrate: %v", err)
		}
		tb.Cleanup(func() {
			for _, t := range []string{spec.Name, spec.Name + "_migrations"} {
				_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{"public", t}.Sanitize())
			}
		})
		return spec
	case "redis":
		c := testservers.RedisClient(tb)
		spec := StoreSpec{Kind: kind, Name: "once-w-" + testservers.Suffix() + ":"}
		tb.Cleanup(func() {
			iter := c.Scan(context.Background(), 0, spec.Name+"*", 1000).Iterator()
			for iter.Next(context.Background()) {
				_ = c.Del(context.Background(), iter.Val()).Err()
			}
		})
		return spec
	}
	tb.Fatalf("unknown store kind %q", kind)
	return StoreSpec{}
}

// Env passes the spec to workers.
func (s StoreSpec) Env() []string {
	return []string{"ONCE_WORKER_STORE=" + s.Kind, "ONCE_WORKER_STORE_NAME=" + s.Name}
}

// StoreSpecFromEnv reads the spec a worker was given.
func StoreSpecFromEnv() StoreSpec {
	return StoreSpec{Kind: os.Getenv("ONCE_WORKER_STORE"), Name: os.Getenv("ONCE_WORKER_STORE_NAME")}
}

// Open connects a worker to the store; pg is the PostgreSQL store (for
// BeginTx), nil for Redis.
func (s StoreSpec) Open(ctx context.Context, pool *pgxpool.Pool) (store backends.Store, pg *postgres.Store, err error) {
	switch s.Kind {
	case "postgres":
		pg, err = postgres.New(pool, &postgres.Config{Table: s.Name})
		return pg, pg, err
	case "redis":
		c := redis.NewClient(&redis.Options{Addr: testservers.RedisAddr()})
		st, err := redisstore.New(ctx, c, &redisstore.Config{KeyPrefix: s.Name, EvictionPolicyCheck: redisstore.EvictionIgnore})
		return st, nil, err
	}
	return nil, nil, fmt.Errorf("unknown store kind %q", s.Kind)
}

// OpenPool connects a worker to the test PostgreSQL server.
func OpenPool(ctx context.Context) (*pgxpool.Pool, error) {
	return pgxpool.New(ctx, testservers.PostgresURL())
}
