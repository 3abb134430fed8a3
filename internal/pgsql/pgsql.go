// Package pgsql is the one home of the PostgreSQL backend's storage
// language: every statement that backends/postgres sends is here, the
// record statements as embedded .sql files (sql/*.sql, each documented at
// its top) and the few bookkeeping statements of transactions and
// migrations below. The benchmark (bench/) reads the same texts to profile
// the library's statements with EXPLAIN (ANALYZE, WAL).
//
// In every text, {table} stands for the quoted, schema-qualified records
// table; Render substitutes it.
package pgsql

import (
	"embed"
	"strings"
)

//go:embed sql/*.sql
var files embed.FS

func file(name string) string {
	b, err := files.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("pgsql: missing embedded " + name + ".sql") // a build defect, caught by the tests
	}
	return string(b)
}

// The record statements, with {table} unrendered. Their parameters are
// documented at the top of each file.
var (
	Claim    = file("claim")
	Takeover = file("takeover")
	Complete = file("complete")
	Renew    = file("renew")
	Release  = file("release")
	Resolve  = file("resolve")
	Sweep    = file("sweep")
	Get      = file("get")
	Delete   = file("delete")
)

// Statements are the record statements rendered for one table.
type Statements struct {
	Claim, Takeover, Complete, Renew, Release, Resolve, Sweep, Get, Delete string
}

// Render returns the record statements for table, which must already be
// quoted and schema-qualified (pgx.Identifier.Sanitize).
func Render(table string) Statements {
	r := strings.NewReplacer("{table}", table)
	return Statements{
		Claim:    r.Replace(Claim),
		Takeover: r.Replace(Takeover),
		Complete: r.Replace(Complete),
		Renew:    r.Replace(Renew),
		Release:  r.Replace(Release),
		Resolve:  r.Replace(Resolve),
		Sweep:    r.Replace(Sweep),
		Get:      r.Replace(Get),
		Delete:   r.Replace(Delete),
	}
}

// Transaction bookkeeping of the backend's InTx store: a Claim or Resolve
// runs between these, in one pipelined batch, so that a failed statement
// (its lock timeout fired) rolls back to the savepoint and leaves the
// caller's transaction usable, and the transaction's own lock_timeout is
// restored after the statement set its own.
const (
	Savepoint          = `SAVEPOINT once_claim`
	ReleaseSavepoint   = `RELEASE SAVEPOINT once_claim`
	RollbackSavepoint  = `ROLLBACK TO SAVEPOINT once_claim; RELEASE SAVEPOINT once_claim`
	SaveLockTimeout    = `SELECT set_config('once.saved_lock_timeout', current_setting('lock_timeout'), true)`
	RestoreLockTimeout = `SELECT set_config('lock_timeout', current_setting('once.saved_lock_timeout'), true)`
)

// Migration bookkeeping of the backend's Migrate. {versions} stands for the
// quoted, schema-qualified <Table>_migrations table, {schema} for the
// quoted schema.
const (
	// MigrateLock: $1 a text naming the table; a transaction-level
	// advisory lock derived from it serialises concurrent Migrates.
	MigrateLock         = `SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))`
	MigrateSchemaExists = `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1::text)`
	MigrateCreateSchema = `CREATE SCHEMA IF NOT EXISTS {schema}`
	MigrateVersions     = `CREATE TABLE IF NOT EXISTS {versions} (
	version    integer     PRIMARY KEY,
	name       text        NOT NULL,
	applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
)`
	MigrateApplied = `SELECT version FROM {versions}`
	MigrateRecord  = `INSERT INTO {versions} (version, name) VALUES ($1::int, $2::text)`
)
