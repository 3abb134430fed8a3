package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the "mysql" driver
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/mysqlstore"
	"github.com/stagedoor/once/backends/sqlitestore"
)

// sqlEnv is a MariaDB/MySQL table or a SQLite file of the test's own,
// migrated by once migrate, and a Store on it.
type sqlEnv struct {
	args  []string
	store backends.Store
	sweep func(context.Context) (int64, error)
}

func (s sqlEnv) flags(args ...string) []string { return append(append([]string{}, s.args...), args...) }

func mysqlDSN() string {
	if dsn := os.Getenv("ONCE_MYSQL_DSN"); dsn != "" {
		return dsn
	}
	return "root@tcp(127.0.0.1:3306)/test"
}

func newMySQL(t *testing.T) sqlEnv {
	t.Helper()
	db, err := sql.Open("mysql", mysqlDSN())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err = db.PingContext(ctx)
		cancel()
	}
	if err != nil {
		unreachable(t, "MariaDB/MySQL at "+mysqlDSN(), err)
	}
	table := randomName("once_cli_")
	t.Cleanup(func() {
		for _, stmt := range []string{"DROP TABLE IF EXISTS `" + table + "`", "DROP TABLE IF EXISTS `" + table + "_migrations`", "DROP PROCEDURE IF EXISTS `" + table + "_call_v1`"} {
			_, _ = db.Exec(stmt)
		}
		_ = db.Close()
	})
	e := sqlEnv{args: []string{"--mysql", mysqlDSN(), "--table", table}}
	assert.Contains(t, mustRun(t, e.flags("migrate")...), "up to date at version 1")
	s, err := mysqlstore.New(db, &mysqlstore.Config{Table: table})
	require.NoError(t, err)
	e.store, e.sweep = s, s.Sweep
	return e
}

func newSQLite(t *testing.T) sqlEnv {
	t.Helper()
	path := filepath.Join(t.TempDir(), "once.db")
	e := sqlEnv{args: []string{"--sqlite", path}}
	r := runCLI(t, e.flags("get", "s", "k")...)
	assert.Equal(t, exitFailure, r.code, "a missing file is not created by a read\n%s", r)
	assert.Contains(t, r.stderr, "once migrate creates one")
	_, err := os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, mustRun(t, e.flags("migrate")...), "up to date at version 1")
	s, err := sqlitestore.New(path, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	e.store, e.sweep = s, s.Sweep
	return e
}

func TestSQLStores(t *testing.T) {
	for name, open := range map[string]func(*testing.T) sqlEnv{"mysql": newMySQL, "sqlite": newSQLite} {
		t.Run(name, func(t *testing.T) {
			t.Run("Lifecycle", func(t *testing.T) { e := open(t); lifecycle(t, e.store, e.flags) })
			t.Run("ResolveHeld", func(t *testing.T) { e := open(t); held(t, e.store, e.flags) })
			t.Run("Steps", func(t *testing.T) { e := open(t); steps(t, e.store, e.flags) })
			t.Run("Operator", func(t *testing.T) { e := open(t); operator(t, e.store, e.flags) })
			t.Run("Check", func(t *testing.T) {
				e := open(t)
				out := mustRun(t, e.flags("--json", "check")...)
				var res checkResult
				require.NoError(t, json.Unmarshal([]byte(out), &res), out)
				assert.Equal(t, name, res.Store)
				assert.True(t, res.OK, out)
				r := runCLI(t, e.flags("--table", "never_migrated", "check")...)
				assert.Equal(t, exitFailure, r.code, "%s", r)
				assert.Contains(t, r.stdout, "run once migrate")
			})
			t.Run("Sweep", func(t *testing.T) {
				e := open(t)
				ctx := context.Background()
				for i, retention := range []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond, time.Hour} {
					r, err := e.store.Claim(ctx, backends.ClaimParams{Scope: "jobs", Key: string(rune('a' + i)), Owner: "o", Lease: retention, Retention: retention})
					require.NoError(t, err)
					require.True(t, r.Claimed)
				}
				admin := e.store.(backends.Admin)
				require.Eventually(t, func() bool {
					rec, err := admin.Get(ctx, "jobs", "c")
					return err == nil && rec.State == 0
				}, 10*time.Second, 5*time.Millisecond, "the short records expire")
				out := mustRun(t, e.flags("--json", "sweep", "--batch", "2")...)
				var res sweepResult
				require.NoError(t, json.Unmarshal([]byte(out), &res), out)
				assert.EqualValues(t, 3, res.Swept, "three expired rows, in batches of two")
				assert.Equal(t, "pending", getJSON(t, e.flags(), "jobs", "d").State, "the live row stays")
				assert.Contains(t, mustRun(t, e.flags("sweep")...), "swept 0 expired records")
				n, err := e.sweep(ctx)
				require.NoError(t, err)
				assert.Zero(t, n, "the CLI swept them all")
			})
		})
	}
}
