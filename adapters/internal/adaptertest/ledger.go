package adaptertest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/internal/testservers"
)

// Ledger is a PostgreSQL table of side effects, one row per effect, with
// no unique constraint: a duplicated effect shows as a second row.
type Ledger struct {
	pool  *pgxpool.Pool
	table string
}

// NewLedger creates a ledger table of its own, dropped when tb ends.
func NewLedger(tb testing.TB) *Ledger {
	tb.Helper()
	pool := testservers.Pool(tb)
	l := &Ledger{pool: pool, table: "once_effects_" + testservers.Suffix()}
	if _, err := pool.Exec(context.Background(), "CREATE TABLE "+l.ident()+" (key text NOT NULL, pid int NOT NULL)"); err != nil {
		tb.Fatalf("create ledger: %v", err)
	}
	tb.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+l.ident()) })
	return l
}

// OpenLedger opens the ledger table from a worker process.
func OpenLedger(pool *pgxpool.Pool, table string) *Ledger { return &Ledger{pool: pool, table: table} }

// Table is the ledger's table name, to pass to workers.
func (l *Ledger) Table() string { return l.table }

func (l *Ledger) ident() string { return pgx.Identifier{l.table}.Sanitize() }

// Record writes one effect for key, committed at once.
func (l *Ledger) Record(ctx context.Context, key string, pid int) error {
	_, err := l.pool.Exec(ctx, "INSERT INTO "+l.ident()+" (key, pid) VALUES ($1, $2)", key, pid)
	return err
}

// RecordTx writes one effect for key in tx: it exists if tx commits.
func (l *Ledger) RecordTx(ctx context.Context, tx pgx.Tx, key string, pid int) error {
	_, err := tx.Exec(ctx, "INSERT INTO "+l.ident()+" (key, pid) VALUES ($1, $2)", key, pid)
	return err
}

// Counts returns the number of effects per key.
func (l *Ledger) Counts(tb testing.TB) map[string]int {
	tb.Helper()
	rows, err := l.pool.Query(context.Background(), "SELECT key, count(*) FROM "+l.ident()+" GROUP BY key")
	if err != nil {
		tb.Fatalf("read ledger: %v", err)
	}
	counts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct {
		key string
		n   int
	}, error) {
		var v struct {
			key string
			n   int
		}
		err := r.Scan(&v.key, &v.n)
		return v, err
	})
	if err != nil {
		tb.Fatalf("read ledger: %v", err)
	}
	out := make(map[string]int, len(counts))
	for _, c := range counts {
		out[c.key] = c.n
	}
	return out
}

// Has reports whether the ledger holds an entry for key.
func (l *Ledger) Has(ctx context.Context, key string) (bool, error) {
	var found bool
	err := l.pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+l.ident()+" WHERE key = $1)", key).Scan(&found)
	return found, err
}
