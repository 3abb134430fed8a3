package faults

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/internal/testservers"
)

// migrateTable creates a fresh records table on the test PostgreSQL
// (skipping without one) and drops it when t ends.
func migrateTable(t testing.TB, prefix string) string {
	t.Helper()
	pool := testservers.Pool(t)
	table := prefix + testservers.Suffix()
	if err := postgres.Migrate(context.Background(), pool, &postgres.Config{Table: table}); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	t.Cleanup(func() {
		for _, tb := range []string{table, table + "_migrations"} {
			_, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+pgx.Identifier{tb}.Sanitize())
		}
	})
	return table
}

// redisPrefix returns a fresh key prefix on the test Redis (skipping
// without one) whose keys are deleted when t ends.
func redisPrefix(t testing.TB, prefix string) string {
	t.Helper()
	c := testservers.RedisClient(t)
	prefix += testservers.Suffix() + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			_ = c.Del(ctx, iter.Val()).Err()
		}
	})
	return prefix
}
