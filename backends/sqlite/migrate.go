package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations returns the embedded migration files, for users who run their
// own migration tool. Files are named NNN_name.up.sql and NNN_name.down.sql
// (the golang-migrate layout). They create the default names,
// "once_records" and "once_records_expires_at_idx"; Open migrates the file
// itself, so most users never need them.
func Migrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embedded directory always exists
	}
	return sub
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations(table string) ([]migration, error) {
	entries, err := fs.Glob(migrationFiles, "migrations/*.up.sql")
	if err != nil {
		return nil, err
	}
	rep := strings.NewReplacer(placeholderTable, `"`+table)
	var ms []migration
	for _, p := range entries {
		base := strings.TrimSuffix(path.Base(p), ".up.sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("once/sqlite: bad migration file name %q", p)
		}
		b, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: rep.Replace(string(b))})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	return ms, nil
}

// Migrate creates or upgrades the records table in one transaction,
// recording each applied version in <Table>_migrations and applying only
// the missing ones, so running it again is a no-op. Open calls it; a second
// process opening the same file waits for the first's transaction.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := loadMigrations(s.table)
	if err != nil {
		return err
	}
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
			if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+versions+" WHERE version = ?", m.version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO "+versions+" (version, name, applied_at) VALUES (?, ?, ?)", m.version, m.name, s.nowMicros()); err != nil {
				return err
			}
		}
		return nil
	})
}
