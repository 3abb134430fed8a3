// Package exstoretest runs an example's scenario on every store: memory
// always, PostgreSQL and Redis when their servers answer (Each), and SQLite
// and MariaDB/MySQL too for the examples that support them (EachOf
// exstore.Kinds). Without a server the subtest is skipped, unless
// ONCE_REQUIRE_SERVERS=1 or CI is set, where it fails.
package exstoretest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stagedoor/once/examples/internal/exstore"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// Each runs fn in one subtest per store kind, with a Config naming a fresh
// table or key prefix (dropped at the end), so that repeated runs never
// replay earlier records.
func Each(t *testing.T, name string, fn func(t *testing.T, c exstore.Config)) {
	t.Helper()
	EachOf(t, name, []string{exstore.Memory, exstore.Postgres, exstore.Redis}, fn)
}

// EachOf runs fn as Each does, on the stores of kinds.
func EachOf(t *testing.T, name string, kinds []string, fn func(t *testing.T, c exstore.Config)) {
	t.Helper()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			c := Config(t, kind, name)
			fn(t, c)
		})
	}
}

// Config returns a Config of kind with a fresh name and Drop set, after
// checking that its server answers (see Require).
func Config(t testing.TB, kind, name string) exstore.Config {
	t.Helper()
	c := exstore.Defaults(kind)
	c.Name = exstore.Unique(strings.ToLower(name))
	c.Drop = true
	Require(t, c)
	return c
}

// Require skips t, or fails it when servers are required, unless the
// server of c's kind answers.
func Require(t testing.TB, c exstore.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var err error
	switch c.Kind {
	case exstore.Postgres:
		var pool interface{ Close() }
		if pool, err = exstore.OpenPool(ctx, c.PostgresURL); err == nil {
			pool.Close()
		}
	case exstore.Redis:
		var client interface{ Close() error }
		if client, err = exstore.OpenClient(ctx, c.RedisAddr); err == nil {
			_ = client.Close()
		}
	case exstore.MySQL:
		var db interface{ Close() error }
		if db, err = exstore.OpenMySQL(ctx, c.MySQLDSN); err == nil {
			_ = db.Close()
		}
	}
	if err == nil {
		return
	}
	msg := c.Kind + " is not usable: " + err.Error() + " (set ONCE_POSTGRES_URL / ONCE_REDIS_ADDR / ONCE_MYSQL_DSN)"
	if serverenv.Required() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
