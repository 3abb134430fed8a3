package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/examples/internal/exstore"
)

// Crash points a worker can be told to die at (the coordinator kill -9s it
// there).
const (
	// crashInWork: the worker claimed the message's key and is doing the
	// work; the bill is not written yet. Its claim stays in progress until
	// the lease ends; then another worker takes it over.
	crashInWork = "in-work"
	// crashAfterBill (PostgreSQL only): the bill is written in the claim's
	// transaction, which is not committed. The kill rolls both back; the
	// reclaimed entry bills once.
	crashAfterBill = "after-bill"
	// crashBeforeAck: once.Do returned (the bill is written and the outcome
	// recorded) but XACK was not sent. The redelivery is replayed.
	crashBeforeAck = "before-ack"
)

// spec is everything a worker process needs, passed in the environment
// variable workerEnv as JSON.
type spec struct {
	Name   string `json:"name"`
	Crash  string `json:"crash,omitempty"`
	Stream string `json:"stream"`
	Group  string `json:"group"`
	// DeadLetters is the stream that receives entries that can never be
	// processed.
	DeadLetters string         `json:"dead_letters"`
	Store       exstore.Config `json:"store"`
	Lease       time.Duration  `json:"lease"`
	MinIdle     time.Duration  `json:"min_idle"`
	Work        time.Duration  `json:"work"`
}

// workerEnv names the environment variable that turns the process into a
// worker.
const workerEnv = "ONCE_QUEUE_WORKER"

func (s spec) env() string {
	b, _ := json.Marshal(s)
	return workerEnv + "=" + string(b)
}

// names of the run's Redis keys (the stream, the bills hash), under the
// run's prefix so that closing the store deletes them too.
func streamKey(c exstore.Config) string { return c.Prefix() + "orders" }
func billsKey(c exstore.Config) string  { return c.Prefix() + "bills" }
func deadKey(c exstore.Config) string   { return c.Prefix() + "dead" }

// openLedger opens the ledger of c: the bills hash in Redis, or a table
// next to the records with -store postgres. The returned pool, if any, is
// the caller's to close.
func openLedger(ctx context.Context, c exstore.Config, client *redis.Client) (ledger, *pgxpool.Pool, error) {
	switch c.Kind {
	case exstore.Redis:
		return redisLedger{client: client, key: billsKey(c)}, nil, nil
	case exstore.Postgres:
		pool, err := exstore.OpenPool(ctx, c.PostgresURL)
		if err != nil {
			return nil, nil, err
		}
		l, err := newPGLedger(ctx, pool, c.Name)
		if err != nil {
			pool.Close()
			return nil, nil, err
		}
		return l, pool, nil
	default:
		return nil, nil, fmt.Errorf("-store %s: the workers are separate processes and share nothing in memory; use -store redis or -store postgres", c.Kind)
	}
}
