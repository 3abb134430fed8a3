package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/examples/internal/exstore"
)

// ledger records the side effect of handling a message: one "bill" per
// order, counted, so that a second execution would show as a 2.
type ledger interface {
	bill(ctx context.Context, orderID string) error
	counts(ctx context.Context) (map[string]int, error)
}

// redisLedger counts bills in a Redis hash (HINCRBY).
type redisLedger struct {
	client *redis.Client
	key    string
}

func (l redisLedger) bill(ctx context.Context, orderID string) error {
	return l.client.HIncrBy(ctx, l.key, orderID, 1).Err()
}

func (l redisLedger) counts(ctx context.Context) (map[string]int, error) {
	m, err := l.client.HGetAll(ctx, l.key).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]int, len(m))
	for k, v := range m {
		var n int
		_, _ = fmt.Sscan(v, &n)
		out[k] = n
	}
	return out, nil
}

// pgLedger counts bills in a PostgreSQL table next to the records.
type pgLedger struct {
	pool  *pgxpool.Pool
	table string // sanitized, schema-qualified
}

func newPGLedger(ctx context.Context, pool *pgxpool.Pool, name string) (pgLedger, error) {
	l := pgLedger{pool: pool, table: pgx.Identifier{exstore.Schema, name + "_bills"}.Sanitize()}
	_, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+l.table+" (order_id text PRIMARY KEY, bills int NOT NULL)")
	return l, err
}

func (l pgLedger) bill(ctx context.Context, orderID string) error {
	_, err := l.pool.Exec(ctx, "INSERT INTO "+l.table+" VALUES ($1, 1) ON CONFLICT (order_id) DO UPDATE SET bills = "+l.table+".bills + 1", orderID)
	return err
}

// billTx writes the bill in tx: it exists if tx commits.
func (l pgLedger) billTx(ctx context.Context, tx pgx.Tx, orderID string) error {
	_, err := tx.Exec(ctx, "INSERT INTO "+l.table+" VALUES ($1, 1) ON CONFLICT (order_id) DO UPDATE SET bills = "+l.table+".bills + 1", orderID)
	return err
}

func (l pgLedger) counts(ctx context.Context) (map[string]int, error) {
	rows, err := l.pool.Query(ctx, "SELECT order_id, bills FROM "+l.table)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	var id string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &n}, func() error { out[id] = n; return nil })
	return out, err
}

func (l pgLedger) drop(ctx context.Context) {
	_, _ = l.pool.Exec(ctx, "DROP TABLE IF EXISTS "+l.table)
}
