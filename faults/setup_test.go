package faults

import (
	"context"
	"strings"
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
	if err := testservers.MigratePostgres(context.Background(), pool, &postgres.Config{Table: table}); err != nil {
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

// testSpec is a fresh store of backend ("postgres", "redis", "mysql" or
// "sqlite") on the test servers, named after prefix (letters and
// underscores) and removed when t ends.
func testSpec(t testing.TB, backend, prefix string) storeSpec {
	t.Helper()
	spec := storeSpec{Backend: backend}
	switch backend {
	case "postgres":
		spec.Addr, spec.Table = testservers.PostgresURL(), migrateTable(t, prefix)
	case "redis":
		spec.Addr, spec.Prefix = testservers.RedisAddr(), redisPrefix(t, strings.ReplaceAll(prefix, "_", "-"))
	case "mysql":
		spec.Addr, spec.Table = mysqlDSN(), migrateMySQL(t, prefix)
	case "sqlite":
		spec.Addr = sqliteFile(t)
	default:
		t.Fatalf("unknown backend %q", backend)
	}
	return spec
}
