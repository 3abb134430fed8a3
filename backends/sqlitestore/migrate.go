package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"io/fs"
	"strings"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/stagedoor/once/backends/internal/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the embedded migration files, for users who run their
// own migration tool. Files are named NNN_name.up.sql and NNN_name.down.sql
// (the golang-migrate layout). They create the default names,
// "once_records", "once_records_expires_at_idx" and
// "once_records_held_idx"; Migrate applies them
// itself, so most users never need them.
func Migrations() fs.FS { return sqlstore.Files(migrationFiles) }

// Migrate creates or upgrades the records table in one transaction,
// recording each applied version in <Table>_migrations and applying only
// the missing ones, so running it again is a no-op. Call it before the
// Store's first operation; a second process (or Store) migrating the same
// file waits for the first's transaction. While another connection creates
// the file and switches it to WAL mode, SQLite answers SQLITE_BUSY at once, without its busy
// handler: Migrate then runs its transaction again, after a backoff from
// 1 ms doubling up to 50 ms, until Config.LockTimeout has passed or ctx
// ends, and returns the last error.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := sqlstore.Load(migrationFiles, strings.NewReplacer(placeholderTable, `"`+s.table))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(s.lockTimeout)
	wait := migrateFirstBackoff
	for {
		err := s.migrateOnce(ctx, ms)
		if !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return interpretError("migrate", ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, migrateMaxBackoff)
	}
}

// The bounds of Migrate's backoff on SQLITE_BUSY.
const (
	migrateFirstBackoff = time.Millisecond
	migrateMaxBackoff   = 50 * time.Millisecond
)

// isBusy reports whether err is an *Error of SQLITE_BUSY (any extended
// code).
func isBusy(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Code&0xff == sqlite3.SQLITE_BUSY
}

func (s *Store) migrateOnce(ctx context.Context, ms []sqlstore.Migration) error {
	versions := `"` + s.table + `_migrations"`
	return s.writeTx(ctx, "migrate", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+versions+` (
	version    INTEGER PRIMARY KEY,
	name       TEXT    NOT NULL,
	applied_at INTEGER NOT NULL
)`); err != nil {
			return err
		}
		for _, m := range ms {
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+versions+" WHERE version = ?", m.Version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+versions+" (version, name, applied_at) VALUES (?, ?, ?)", m.Version, m.Name, s.nowMicros()); err != nil {
				return err
			}
		}
		return nil
	})
}
