package faults

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Ledger modes: how the side effect is made.
const (
	modeRaw    = "raw"    // INSERT a row, no constraint: every fn run is an effect
	modeFenced = "fenced" // INSERT … ON CONFLICT on the key: the provider dedups by DerivedKey
	modeTx     = "tx"     // INSERT in the DoTx transaction: effect and outcome commit together
)

// effect is one row of the ledger.
type effect struct {
	Key, Value, Worker string
	Pid                int
	// Attempts counts the calls the fenced "provider" absorbed for the key
	// (1 in the other modes).
	Attempts int
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// ledger records side effects.
type ledger interface {
	// apply makes the effect for key and returns the effect's value: value
	// itself, or, for a fenced effect already made, the first value.
	apply(ctx context.Context, q querier, key, value, worker string, pid int) (string, error)
	// effects returns every effect by key.
	effects(ctx context.Context) (map[string][]effect, error)
}

// pgLedger is a ledger table in PostgreSQL.
type pgLedger struct {
	pool  *pgxpool.Pool
	table string
	mode  string
}

func createLedger(ctx context.Context, pool *pgxpool.Pool, table, mode string) (*pgLedger, error) {
	id := pgx.Identifier{table}.Sanitize()
	ddl := fmt.Sprintf(`CREATE TABLE %s (
	id bigserial PRIMARY KEY,
	key text NOT NULL,
	value text NOT NULL,
	worker text NOT NULL,
	pid int NOT NULL,
	attempts int NOT NULL DEFAULT 1,
	at timestamptz NOT NULL DEFAULT clock_timestamp())`, id)
	if _, err := pool.Exec(ctx, ddl); err != nil {
		return nil, err
	}
	if mode == modeFenced {
		if _, err := pool.Exec(ctx, fmt.Sprintf(`CREATE UNIQUE INDEX ON %s (key)`, id)); err != nil {
			return nil, err
		}
	}
	return &pgLedger{pool: pool, table: table, mode: mode}, nil
}

// openLedger names an existing ledger table (in a worker process).
func openLedger(pool *pgxpool.Pool, table, mode string) *pgLedger {
	return &pgLedger{pool: pool, table: table, mode: mode}
}

func (l *pgLedger) drop(ctx context.Context) {
	_, _ = l.pool.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{l.table}.Sanitize())
}

func (l *pgLedger) apply(ctx context.Context, q querier, key, value, worker string, pid int) (string, error) {
	if q == nil {
		q = l.pool
	}
	id := pgx.Identifier{l.table}.Sanitize()
	sql := fmt.Sprintf(`INSERT INTO %s (key, value, worker, pid) VALUES ($1, $2, $3, $4) RETURNING value`, id)
	if l.mode == modeFenced {
		// The provider's dedup: the same DerivedKey gets the first answer.
		sql = fmt.Sprintf(`INSERT INTO %[1]s AS l (key, value, worker, pid) VALUES ($1, $2, $3, $4)
ON CONFLICT (key) DO UPDATE SET attempts = l.attempts + 1 RETURNING l.value`, id)
	}
	var got string
	err := q.QueryRow(ctx, sql, key, value, worker, pid).Scan(&got)
	return got, err
}

// provide is the fenced effect of a held owner: the provider keeps the
// first value per key and returns it with the number of calls it got for
// the key, this one included.
func (l *pgLedger) provide(ctx context.Context, key, value, worker string, pid int) (got string, calls int, err error) {
	err = l.pool.QueryRow(ctx, fmt.Sprintf(`INSERT INTO %s AS l (key, value, worker, pid) VALUES ($1, $2, $3, $4)
ON CONFLICT (key) DO UPDATE SET attempts = l.attempts + 1 RETURNING l.value, l.attempts`, pgx.Identifier{l.table}.Sanitize()),
		key, value, worker, pid).Scan(&got, &calls)
	return got, calls, err
}

// lookup is what a reconciler asks the provider: the value of the effect
// made for key, if any.
func (l *pgLedger) lookup(ctx context.Context, key string) (value string, ok bool, err error) {
	err = l.pool.QueryRow(ctx, fmt.Sprintf(`SELECT value FROM %s WHERE key = $1`, pgx.Identifier{l.table}.Sanitize()), key).Scan(&value)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return value, err == nil, err
}

func (l *pgLedger) effects(ctx context.Context) (map[string][]effect, error) {
	rows, err := l.pool.Query(ctx, fmt.Sprintf(`SELECT key, value, worker, pid, attempts FROM %s ORDER BY id`, pgx.Identifier{l.table}.Sanitize()))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]effect{}
	for rows.Next() {
		var e effect
		if err := rows.Scan(&e.Key, &e.Value, &e.Worker, &e.Pid, &e.Attempts); err != nil {
			return nil, err
		}
		out[e.Key] = append(out[e.Key], e)
	}
	return out, rows.Err()
}

// memLedger is an in-process raw ledger, for the tests that need no server.
type memLedger struct {
	mu   sync.Mutex
	rows map[string][]effect
}

func newMemLedger() *memLedger { return &memLedger{rows: map[string][]effect{}} }

func (l *memLedger) apply(_ context.Context, _ querier, key, value, worker string, pid int) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows[key] = append(l.rows[key], effect{Key: key, Value: value, Worker: worker, Pid: pid, Attempts: 1})
	return value, nil
}

func (l *memLedger) effects(context.Context) (map[string][]effect, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string][]effect, len(l.rows))
	for k, v := range l.rows {
		out[k] = append([]effect(nil), v...)
	}
	return out, nil
}
