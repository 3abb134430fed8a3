package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgTable is the quoted, schema-qualified records table of the flags.
func pgTable(c *cli) string { return pgx.Identifier{c.Schema, c.Table}.Sanitize() }

// latestMigration is the highest version among the embedded migrations
// of files (a store's Migrations()).
func latestMigration(files fs.FS) int {
	names, _ := fs.Glob(files, "*.up.sql")
	latest := 0
	for _, n := range names {
		num, _, _ := strings.Cut(n, "_")
		if v, err := strconv.Atoi(num); err == nil && v > latest {
			latest = v
		}
	}
	return latest
}

// migrationVersion returns the highest version applied to the flags'
// table (from <table>_migrations, which Store.Migrate keeps), or 0 when
// Migrate never ran.
func migrationVersion(ctx context.Context, pool *pgxpool.Pool, c *cli) (int, error) {
	versions := pgx.Identifier{c.Schema, c.Table + "_migrations"}.Sanitize()
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass($1::text) IS NOT NULL", versions).Scan(&exists); err != nil {
		return 0, pgFailure("migration version", err)
	}
	if !exists {
		return 0, nil
	}
	var v int32
	if err := pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+versions).Scan(&v); err != nil {
		return 0, pgFailure("migration version", err)
	}
	return int(v), nil
}

// pgFailure describes a driver error of the CLI's own queries as the
// backend does: SQLSTATE and kind only, never the server's message or the
// connection string.
func pgFailure(what string, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", what, context.DeadlineExceeded)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", what, context.Canceled)
	case errors.As(err, &pgErr):
		return fmt.Errorf("%s: server error (SQLSTATE %s)", what, pgErr.Code)
	default:
		return fmt.Errorf("%s: cannot reach the server", what)
	}
}
