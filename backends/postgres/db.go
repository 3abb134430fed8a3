package postgres

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is what a Store sends its statements through, Migrate's included. A
// *pgxpool.Pool satisfies it, and so do a *pgx.Conn and any wrapper of
// either (a tracing or metrics wrapper, another pool type) with these
// methods.
//
// A *pgxpool.Pool, or any DB safe for concurrent use, runs the Store's
// statements concurrently. A *pgx.Conn is one connection, which pgx does
// not allow to be used concurrently: New detects it and serialises the
// Store's statements on it, which degrades as one connection must (see
// Config.SingleConnection). A pgx.Tx is refused: use Store.BeginTx or
// Store.InTx for a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Begin(ctx context.Context) (pgx.Tx, error)
}

var (
	_ DB = (*pgxpool.Pool)(nil)
	_ DB = (*pgx.Conn)(nil)
)

// ErrTxAsDB is returned by New for a pgx.Tx passed as its DB:
// a Store must outlive any one transaction. Bind a Store to a transaction
// with Store.InTx, or begin one with Store.BeginTx.
var ErrTxAsDB = errors.New("once/postgres: a pgx.Tx cannot be a Store's DB; use Store.InTx or Store.BeginTx")

// checkDB refuses a transaction and says whether db is one connection.
func checkDB(db DB, cfg resolved) (single bool, err error) {
	if _, ok := db.(pgx.Tx); ok {
		return false, ErrTxAsDB
	}
	_, isConn := db.(*pgx.Conn)
	return isConn || cfg.singleConnection, nil
}

// serialDB runs one statement at a time on a DB that is a single
// connection. A QueryRow holds the connection until its row is scanned
// (every caller in this package scans at once).
type serialDB struct {
	mu sync.Mutex
	db DB
}

func (s *serialDB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.db.Exec(ctx, sql, args...)
}

func (s *serialDB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	s.mu.Lock()
	return &serialRow{row: s.db.QueryRow(ctx, sql, args...), unlock: s.mu.Unlock}
}

type serialRow struct {
	row    pgx.Row
	unlock func()
	once   sync.Once
}

func (r *serialRow) Scan(dest ...any) error {
	defer r.once.Do(r.unlock)
	return r.row.Scan(dest...)
}
