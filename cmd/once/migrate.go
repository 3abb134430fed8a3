package main

import (
	"fmt"
)

type migrateCmd struct{}

func (m *migrateCmd) Run(e *env) error {
	k, err := e.cli.selectBackend()
	if err != nil {
		return err
	}
	if k != kindPostgres {
		return usagef("migrate is for PostgreSQL; Redis needs no migration")
	}
	ctx, c, done, err := e.connect(k)
	if err != nil {
		return err
	}
	defer done()
	before, err := migrationVersion(ctx, c.pool, e.cli)
	if err != nil {
		return err
	}
	if err := c.pg.Migrate(ctx); err != nil {
		return err
	}
	after, err := migrationVersion(ctx, c.pool, e.cli)
	if err != nil {
		return err
	}
	table := quoteText(pgTable(e.cli))
	text := fmt.Sprintf("%s: migrated from version %d to %d", table, before, after)
	if before == after {
		text = fmt.Sprintf("%s: up to date at version %d", table, after)
	}
	return e.emit(struct {
		Table string `json:"table"`
		From  int    `json:"from_version"`
		To    int    `json:"to_version"`
	}{pgTable(e.cli), before, after}, text)
}
