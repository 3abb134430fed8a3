package exstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/stagedoor/once/backends"
	mysqlstore "github.com/stagedoor/once/backends/mysqlstore"
	sqlitestore "github.com/stagedoor/once/backends/sqlitestore"
)

// sqlitePath is the file of -store sqlite: SQLitePath, or a file named
// after the table in the temporary directory.
func (c Config) sqlitePath() string {
	if c.SQLitePath != "" {
		return c.SQLitePath
	}
	return filepath.Join(os.TempDir(), "once-example-"+c.Name+".db")
}

func openSQLite(ctx context.Context, c Config) (backends.Store, func(), error) {
	path := c.sqlitePath()
	store, err := sqlitestore.New(path, &sqlitestore.Config{Table: c.Name})
	if err != nil {
		return nil, nil, err
	}
	if err := store.Migrate(ctx); err != nil {
		_ = store.Close()
		return nil, nil, err
	}
	return store, func() {
		_ = store.Close()
		if c.Drop && c.SQLitePath == "" {
			// The file is this run's own; its WAL and shared-memory files go
			// with it.
			for _, suffix := range []string{"", "-wal", "-shm"} {
				_ = os.Remove(path + suffix)
			}
		}
	}, nil
}

func openMySQL(ctx context.Context, c Config) (backends.Store, func(), error) {
	db, err := OpenMySQL(ctx, c.MySQLDSN)
	if err != nil {
		return nil, nil, err
	}
	store, err := mysqlstore.New(db, &mysqlstore.Config{Table: c.Name})
	if err == nil {
		err = store.Migrate(ctx)
	}
	drop := func() {
		if !c.Drop {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = DropMySQLTable(ctx, db, c.Name)
	}
	if err != nil {
		if store != nil {
			_ = store.Close()
		}
		drop()
		_ = db.Close()
		return nil, nil, err
	}
	return store, func() {
		_ = store.Close()
		drop()
		_ = db.Close()
	}, nil
}

// OpenMySQL connects to MariaDB/MySQL and checks the connection.
func OpenMySQL(ctx context.Context, dsn string) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("mysql: %w", err)
	}
	db := sql.OpenDB(connector)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("mysql at %s/%s: %w", cfg.Addr, cfg.DBName, err)
	}
	return db, nil
}

// DropMySQLTable drops what mysqlstore's Migrate created for table in the
// connection's database: the records and migrations tables, and every
// procedure named <table>_….
func DropMySQLTable(ctx context.Context, db *sql.DB, table string) error {
	rows, err := db.QueryContext(ctx, `SELECT ROUTINE_NAME FROM information_schema.ROUTINES
		WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = 'PROCEDURE' AND ROUTINE_NAME LIKE ?`,
		strings.ReplaceAll(table, "_", `\_`)+`\_%`)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			_ = rows.Close()
			return err
		}
		names = append(names, n)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		_, err := db.ExecContext(ctx, "DROP PROCEDURE IF EXISTS "+quoteMySQL(n))
		errs = append(errs, err)
	}
	for _, t := range []string{table, table + "_migrations"} {
		_, err := db.ExecContext(ctx, "DROP TABLE IF EXISTS "+quoteMySQL(t))
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// quoteMySQL quotes a name made of letters, digits and underscores (see
// Unique; mysqlstore validates the table's).
func quoteMySQL(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }
