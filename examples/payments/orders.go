package main

import (
	"context"
	"database/sql"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/mysqlstore"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/sqlitestore"
	"github.com/stagedoor/once/examples/internal/exstore"
)

// orderTable is the shop's orders table, where the last step of an order
// writes its row. It has no unique constraint on the order: a second
// write of an order would show as a second row.
type orderTable interface {
	// write is the order step of the intent ctx carries: it writes the
	// order's row, once per intent.
	write(ctx context.Context, orderID, chargeID string) error
	// count returns the rows of orderID; ok is false when the table is
	// not in a database the demo can read (it lives in a shop process).
	count(ctx context.Context, orderID string) (n int, ok bool, err error)
	// create creates the table, drop drops it.
	create(ctx context.Context) error
	drop(ctx context.Context) error
	// String says where the rows live and how the step writes them.
	String() string
}

// openOrders returns the orders table beside store, named after cfg: a SQL
// table in the store's database on PostgreSQL, MariaDB/MySQL and SQLite,
// otherwise a table in this process.
func openOrders(store backends.Store, cfg exstore.Config) orderTable {
	name := cfg.Name + "_orders"
	switch s := store.(type) {
	case *postgres.Store:
		t := pgx.Identifier{exstore.Schema, name}.Sanitize()
		return &sqlOrders{name: t, sql: orderSQL{
			create: "CREATE TABLE IF NOT EXISTS " + t + " (id bigserial PRIMARY KEY, order_id text NOT NULL, charge_id text NOT NULL)",
			insert: "INSERT INTO " + t + " (order_id, charge_id) VALUES ($1, $2)",
			count:  "SELECT count(*) FROM " + t + " WHERE order_id = $1",
		}, begin: func(ctx context.Context) (sqlTx, backends.Store, error) {
			tx, bound, err := s.BeginTx(ctx)
			return pgxTx{tx}, bound, err
		}}
	case *sqlitestore.Store:
		return &sqlOrders{name: name, sql: stdOrderSQL(name, "INTEGER PRIMARY KEY"), begin: func(ctx context.Context) (sqlTx, backends.Store, error) {
			tx, bound, err := s.BeginTx(ctx)
			return stdTx{tx}, bound, err
		}}
	case *mysqlstore.Store:
		return &sqlOrders{name: name, sql: stdOrderSQL(name, "BIGINT AUTO_INCREMENT PRIMARY KEY"), begin: func(ctx context.Context) (sqlTx, backends.Store, error) {
			tx, bound, err := s.BeginTx(ctx)
			return stdTx{tx}, bound, err
		}}
	}
	return &processOrders{rows: map[string]int{}}
}

// sqlOrders is an orders table in the store's own database. Its step is a
// once.StepTx: the row and the step's checkpoint commit in one
// transaction, or neither does, so the row is written exactly once.
type sqlOrders struct {
	name  string
	sql   orderSQL
	begin func(context.Context) (sqlTx, backends.Store, error)
}

type orderSQL struct{ create, insert, count string }

// stdOrderSQL is the SQL of SQLite and MariaDB/MySQL, whose key column
// is declared as id.
func stdOrderSQL(table, id string) orderSQL {
	return orderSQL{
		create: "CREATE TABLE IF NOT EXISTS " + table + " (id " + id + ", order_id VARCHAR(64) NOT NULL, charge_id VARCHAR(64) NOT NULL)",
		insert: "INSERT INTO " + table + " (order_id, charge_id) VALUES (?, ?)",
		count:  "SELECT COUNT(*) FROM " + table + " WHERE order_id = ?",
	}
}

func (t *sqlOrders) write(ctx context.Context, orderID, chargeID string) error {
	_, err := once.StepTx(ctx, "order", t.begin, func(ctx context.Context, tx sqlTx) (string, error) {
		return orderID, tx.exec(ctx, t.sql.insert, orderID, chargeID)
	})
	return err
}

func (t *sqlOrders) count(ctx context.Context, orderID string) (n int, ok bool, err error) {
	err = t.inTx(ctx, func(tx sqlTx) error {
		n, err = tx.queryInt(ctx, t.sql.count, orderID)
		return err
	})
	return n, true, err
}

func (t *sqlOrders) create(ctx context.Context) error {
	return t.inTx(ctx, func(tx sqlTx) error { return tx.exec(ctx, t.sql.create) })
}

func (t *sqlOrders) drop(ctx context.Context) error {
	return t.inTx(ctx, func(tx sqlTx) error { return tx.exec(ctx, "DROP TABLE IF EXISTS "+t.name) })
}

// inTx runs fn in a transaction of the store and commits it.
func (t *sqlOrders) inTx(ctx context.Context, fn func(sqlTx) error) error {
	tx, _, err := t.begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

func (t *sqlOrders) String() string {
	return "table " + t.name + " in the store's database; the order step is a once.StepTx: the row commits with the step's checkpoint"
}

// sqlTx is a transaction of a SQL store, whatever its driver.
type sqlTx interface {
	once.Tx
	exec(ctx context.Context, query string, args ...any) error
	queryInt(ctx context.Context, query string, args ...any) (int, error)
}

// pgxTx is a PostgreSQL store's transaction.
type pgxTx struct{ pgx.Tx }

func (t pgxTx) exec(ctx context.Context, query string, args ...any) error {
	_, err := t.Exec(ctx, query, args...)
	return err
}

func (t pgxTx) queryInt(ctx context.Context, query string, args ...any) (n int, err error) {
	return n, t.QueryRow(ctx, query, args...).Scan(&n)
}

// stdTx is a database/sql store's transaction: a dbTx.
type stdTx struct{ dbTx }

// dbTx is what sqlitestore.Tx and mysqlstore.Tx have: an *sql.Tx whose
// Commit and Rollback take a context.
type dbTx interface {
	once.Tx
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (t stdTx) exec(ctx context.Context, query string, args ...any) error {
	_, err := t.ExecContext(ctx, query, args...)
	return err
}

func (t stdTx) queryInt(ctx context.Context, query string, args ...any) (n int, err error) {
	return n, t.QueryRowContext(ctx, query, args...).Scan(&n)
}

// processOrders is an orders table in the shop's process, for a store with
// no SQL database (Redis). Its step is a plain once.Step: at least once,
// like any effect outside the store's database, and the rows die with
// the process.
type processOrders struct {
	mu   sync.Mutex
	rows map[string]int // by order
}

func (t *processOrders) write(ctx context.Context, orderID, chargeID string) error {
	_, err := once.Step(ctx, "order", func(context.Context) (string, error) {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.rows[orderID]++
		return orderID, nil
	})
	return err
}

func (t *processOrders) count(context.Context, string) (int, bool, error) { return 0, false, nil }
func (t *processOrders) create(context.Context) error                     { return nil }
func (t *processOrders) drop(context.Context) error                       { return nil }

func (t *processOrders) String() string {
	return "a table in the shop's process (the store has no SQL database for a StepTx); the order step is a once.Step, and the rows die with the process"
}
