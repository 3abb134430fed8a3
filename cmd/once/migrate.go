package main

import (
	"fmt"
	"io/fs"

	"github.com/stagedoor/once/backends/mysqlstore"
	"github.com/stagedoor/once/backends/sqlitestore"
)

type migrateCmd struct{}

// migrateResult is what migrate prints. From is PostgreSQL's alone, the
// one store whose CLI reads the version before.
type migrateResult struct {
	Table string `json:"table"`
	From  *int   `json:"from_version,omitempty"`
	To    int    `json:"to_version"`
}

func (m *migrateCmd) Run(e *env) error {
	k, err := e.cli.selectBackend()
	if err != nil {
		return err
	}
	if !k.sql() {
		return usagef("migrate is for the SQL stores; Redis needs no migration")
	}
	e.cli.createFile = true
	ctx, c, done, err := e.connect(k)
	if err != nil {
		return err
	}
	defer done()
	table := e.cli.tableName(k)
	if k != kindPostgres {
		if err := c.sql.Migrate(ctx); err != nil {
			return err
		}
		files := fs.FS(mysqlstore.Migrations())
		if k == kindSQLite {
			files = sqlitestore.Migrations()
		}
		to := latestMigration(files)
		return e.emit(migrateResult{Table: table, To: to}, fmt.Sprintf("%s: up to date at version %d", quoteText(table), to))
	}
	before, err := migrationVersion(ctx, c.pool, e.cli)
	if err != nil {
		return err
	}
	if err := c.sql.Migrate(ctx); err != nil {
		return err
	}
	after, err := migrationVersion(ctx, c.pool, e.cli)
	if err != nil {
		return err
	}
	text := fmt.Sprintf("%s: migrated from version %d to %d", quoteText(table), before, after)
	if before == after {
		text = fmt.Sprintf("%s: up to date at version %d", quoteText(table), after)
	}
	return e.emit(migrateResult{Table: table, From: &before, To: after}, text)
}
