package mysqlstore

import (
	"context"
	"database/sql"
	"embed"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/stagedoor/once/backends/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// statementSeparator separates the statements of a migration file. It is a
// SQL comment, so tools that send a whole file at once may ignore it.
const statementSeparator = "\n-- once:statement\n"

// migrateLockTimeout bounds how long Migrate waits for another instance's
// Migrate of the same table.
const migrateLockTimeout = 60 * time.Second

// Migrations returns the embedded migration files, for users who run their
// own migration tool. Files are named NNN_name.up.sql and NNN_name.down.sql
// (the golang-migrate layout; it needs multiStatements=true in its DSN,
// which this package itself never needs). They create the default names,
// `once_records` and `once_records_call_v1`; to use another table, run
// Migrate, or replace the prefix `once_records in your copy with the lower-case name the Config gives (see
// IdentifierError).
func Migrations() fs.FS { return sqlstore.Files(migrationFiles) }

// migration is one embedded up migration, split into statements.
type migration struct {
	sqlstore.Migration
	statements []string
}

// loadMigrations returns the up migrations in version order, rendered for
// table and split into statements.
func loadMigrations(table string) ([]migration, error) {
	loaded, err := sqlstore.Load(migrationFiles, strings.NewReplacer(placeholderTable, "`"+table))
	if err != nil {
		return nil, err
	}
	ms := make([]migration, len(loaded))
	for i, m := range loaded {
		ms[i] = migration{Migration: m, statements: splitStatements(m.SQL)}
	}
	return ms, nil
}

// splitStatements splits a migration file at its separators, dropping
// the trailing semicolons and the chunks that hold only comments.
func splitStatements(file string) []string {
	var out []string
	for _, chunk := range strings.Split(file, statementSeparator) {
		chunk = strings.TrimSpace(chunk)
		chunk = strings.TrimSpace(strings.TrimSuffix(chunk, ";"))
		if onlyComments(chunk) {
			continue
		}
		out = append(out, chunk)
	}
	return out
}

func onlyComments(chunk string) bool {
	for line := range strings.Lines(chunk) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "--") {
			return false
		}
	}
	return true
}

// Migrate creates or upgrades the records table and its procedures in the
// connection's current database. It records each applied version in
// <Table>_migrations and applies only the missing ones, so running it again
// is a no-op. It holds a named lock (GET_LOCK) derived from the database and
// table names while it works, so any number of instances may call it at once
// at startup: one applies the migrations, the others wait (at most a minute)
// and then find nothing to do. MySQL DDL is not transactional: a Migrate
// interrupted halfway leaves some statements applied, and the next Migrate
// applies the version again, which every statement tolerates (IF NOT
// EXISTS, DROP PROCEDURE IF EXISTS before CREATE PROCEDURE). It needs the
// CREATE, INDEX and CREATE ROUTINE privileges; the Store then needs
// SELECT, INSERT, UPDATE, DELETE and EXECUTE. Run it (at each instance's
// startup, or once) before the Store serves.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := loadMigrations(s.cfg.table)
	if err != nil {
		return err
	}
	conn, err := s.db.Conn(ctx)
	if _, err := interpretError("migrate", err); err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	if err := s.checkSession(ctx, "migrate", conn.QueryRowContext); err != nil {
		return err
	}

	lockName := "CONCAT('once:', SHA1(CONCAT(DATABASE(), '.', ?)))"
	var got sql.NullInt64
	err = conn.QueryRowContext(ctx, "SELECT GET_LOCK("+lockName+", ?)", s.cfg.table, int(migrateLockTimeout/time.Second)).Scan(&got)
	if _, err := interpretError("migrate", err); err != nil {
		return err
	}
	if got.Int64 != 1 {
		return &Error{Op: "migrate", kind: "another Migrate of this table holds the lock"}
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "DO RELEASE_LOCK("+lockName+")", s.cfg.table)
	}()
	return migrateConn(ctx, conn, s.cfg.table, ms)
}

func migrateConn(ctx context.Context, conn *sql.Conn, table string, ms []migration) error {
	versions := quote(table + "_migrations")
	if _, err := conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+versions+` (
	version    INT          NOT NULL PRIMARY KEY,
	name       VARCHAR(255) NOT NULL,
	applied_at DATETIME(6)  NOT NULL
) ENGINE=InnoDB`); err != nil {
		_, err = interpretError("migrate", err)
		return err
	}
	rows, err := conn.QueryContext(ctx, "SELECT version FROM "+versions)
	if _, err := interpretError("migrate", err); err != nil {
		return err
	}
	var applied []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			_ = rows.Close()
			_, err = interpretError("migrate", err)
			return err
		}
		applied = append(applied, v)
	}
	if _, err := interpretError("migrate", rows.Err()); err != nil {
		return err
	}
	_ = rows.Close()
	for _, m := range ms {
		if slices.Contains(applied, m.Version) {
			continue
		}
		for _, stmt := range m.statements {
			// No arguments: the driver sends the text protocol, which is
			// what CREATE PROCEDURE needs.
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				_, err = interpretError("migrate", err)
				return err
			}
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO "+versions+" (version, name, applied_at) VALUES (?, ?, UTC_TIMESTAMP(6))", m.Version, m.Name); err != nil {
			_, err = interpretError("migrate", err)
			return err
		}
	}
	return nil
}
