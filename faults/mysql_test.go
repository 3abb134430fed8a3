package faults

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	mysqlstore "github.com/stagedoor/once/backends/mysqlstore"
	"github.com/stagedoor/once/internal/testservers"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// mysqlDSN is ONCE_MYSQL_DSN, or the local MariaDB (root, no password,
// database test).
func mysqlDSN() string {
	if d := os.Getenv("ONCE_MYSQL_DSN"); d != "" {
		return d
	}
	return "root@tcp(127.0.0.1:3306)/test"
}

// migrateMySQL creates a fresh mysqlstore table (with its procedures) on
// the test MariaDB and drops it when t ends. Without a server it skips t,
// or fails it under ONCE_REQUIRE_SERVERS=1 or CI.
func migrateMySQL(t testing.TB, prefix string) string {
	t.Helper()
	db, err := newMySQL(mysqlDSN(), 2)
	if err != nil {
		t.Fatalf("MariaDB DSN: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		if serverenv.Required() {
			t.Fatalf("MariaDB at %s: %v", mysqlDSN(), err)
		}
		t.Skipf("MariaDB at %s: %v (set ONCE_MYSQL_DSN)", mysqlDSN(), err)
	}
	table := prefix + testservers.Suffix()
	st, err := mysqlstore.New(db, &mysqlstore.Config{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = st.Close()
		for _, q := range []string{
			"DROP PROCEDURE IF EXISTS `" + table + "_call_v1`",
			"DROP TABLE IF EXISTS `" + table + "`",
			"DROP TABLE IF EXISTS `" + table + "_migrations`",
		} {
			_, _ = db.ExecContext(context.Background(), q)
		}
		_ = db.Close()
	})
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return table
}

// mysqlHostPort is the address of a MariaDB DSN.
func mysqlHostPort(t testing.TB, dsn string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("ONCE_MYSQL_DSN: %v", err)
	}
	return cfg.Addr
}

// mysqlWithAddr replaces the address of a MariaDB DSN.
func mysqlWithAddr(t testing.TB, dsn, hostPort string) string {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("ONCE_MYSQL_DSN: %v", err)
	}
	cfg.Net, cfg.Addr = "tcp", hostPort
	return cfg.FormatDSN()
}

// sqliteFile creates a fresh SQLite store file in t's temporary directory
// (migrated once here, so that the workers' concurrent opens find it
// ready) and returns its path.
func sqliteFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "once.db")
	st, err := storeSpec{Backend: "sqlite", Addr: path}.open(context.Background())
	if err != nil {
		t.Fatalf("sqlite: %v", err)
	}
	st.close()
	return path
}
