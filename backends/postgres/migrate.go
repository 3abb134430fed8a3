package postgres

import (
	"context"
	"embed"
	"io/fs"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/backends/internal/sqlstore"
	"github.com/stagedoor/once/internal/pgsql"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// The quoted default names in the embedded SQL, replaced by Migrate with
// the names of its Config: the table and its index.
const (
	placeholderTable     = `"public"."once_records"`
	placeholderHeldIndex = `"once_records_held_idx"`
)

// Migrations returns the embedded migration files, for users who run their
// own migration tool. Files are named NNN_name.up.sql and NNN_name.down.sql
// (the golang-migrate layout, which atlas also reads; goose users copy the
// up and down parts into one annotated file). They create the default names,
// "public"."once_records"; to use another schema or table, run Migrate, or
// edit the names in your copy.
func Migrations() fs.FS { return sqlstore.Files(migrationFiles) }

// renderer replaces the default names of the embedded migration files with
// those of r.
func renderer(r resolved) *strings.Replacer {
	return strings.NewReplacer(
		placeholderTable, r.qualifiedTable(),
		placeholderHeldIndex, pgx.Identifier{r.table + "_held_idx"}.Sanitize(),
	)
}

// Migrate creates or upgrades the Store's records table (its Config's
// schema and table) in one transaction. It creates the schema if missing,
// records each applied version in <Table>_migrations and applies only the
// missing ones, so running it again is a no-op. It holds a
// transaction-level advisory lock (pg_advisory_xact_lock) derived from the
// table's name, so any number of instances may call it at once at startup:
// one applies the migrations, the others wait and then find nothing to do.
// It runs on the Store's DB and commits its own transaction.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := sqlstore.Load(migrationFiles, renderer(s.cfg))
	if err != nil {
		return err
	}
	tx, err := s.conn.Begin(ctx)
	if _, err := interpretError("migrate", err); err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := migrateTx(ctx, tx, s.cfg, ms); err != nil {
		return err
	}
	_, err = interpretError("migrate", tx.Commit(ctx))
	return err
}

func migrateTx(ctx context.Context, tx pgx.Tx, r resolved, ms []sqlstore.Migration) error {
	lockKey := "once/postgres migrate " + r.qualifiedTable()
	if _, err := tx.Exec(ctx, pgsql.MigrateLock, lockKey); err != nil {
		_, err = interpretError("migrate", err)
		return err
	}
	var schemaExists bool
	err := tx.QueryRow(ctx, pgsql.MigrateSchemaExists, r.schema).Scan(&schemaExists)
	if _, err := interpretError("migrate", err); err != nil {
		return err
	}
	if !schemaExists {
		if _, err := tx.Exec(ctx, strings.ReplaceAll(pgsql.MigrateCreateSchema, "{schema}", pgx.Identifier{r.schema}.Sanitize())); err != nil {
			_, err = interpretError("migrate", err)
			return err
		}
	}
	versions := strings.NewReplacer("{versions}", pgx.Identifier{r.schema, r.table + "_migrations"}.Sanitize())
	if _, err := tx.Exec(ctx, versions.Replace(pgsql.MigrateVersions)); err != nil {
		_, err = interpretError("migrate", err)
		return err
	}
	rows, err := tx.Query(ctx, versions.Replace(pgsql.MigrateApplied))
	if _, err := interpretError("migrate", err); err != nil {
		return err
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if _, err := interpretError("migrate", err); err != nil {
		return err
	}
	for _, m := range ms {
		if slices.Contains(applied, int32(m.Version)) {
			continue
		}
		// No arguments: pgx sends the multi-statement file as a simple query.
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			_, err = interpretError("migrate", err)
			return err
		}
		if _, err := tx.Exec(ctx, versions.Replace(pgsql.MigrateRecord), m.Version, m.Name); err != nil {
			_, err = interpretError("migrate", err)
			return err
		}
	}
	return nil
}
