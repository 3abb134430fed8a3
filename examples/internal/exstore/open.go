package exstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
)

// Unique returns base followed by a random suffix: a fresh table or
// prefix, so that a run never replays the records of an earlier one.
func Unique(base string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return base + "_" + hex.EncodeToString(b[:])
}

// Open opens the store of c. The close function closes the pool or client
// Open created (after dropping the records when c.Drop is set); call it
// once, after the last use of the store.
func Open(ctx context.Context, c Config) (backends.Store, func(), error) {
	switch c.Kind {
	case Memory, "":
		return memory.New(nil), func() {}, nil
	case Postgres:
		return openPostgres(ctx, c)
	case Redis:
		return openRedis(ctx, c)
	case SQLite:
		return openSQLite(ctx, c)
	case MySQL:
		return openMySQL(ctx, c)
	default:
		return nil, nil, fmt.Errorf("unknown store %q: want memory, postgres, redis, sqlite or mysql", c.Kind)
	}
}

func (c Config) pgConfig() *postgres.Config { return &postgres.Config{Schema: Schema, Table: c.Name} }

func openPostgres(ctx context.Context, c Config) (backends.Store, func(), error) {
	pool, err := OpenPool(ctx, c.PostgresURL)
	if err != nil {
		return nil, nil, err
	}
	store, err := postgres.New(pool, c.pgConfig())
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	if err := store.Migrate(ctx); err != nil {
		pool.Close()
		return nil, nil, err
	}
	return store, func() {
		// The listening connection Watch lends from the pool is the
		// store's (the pool does not count it): Close ends it first.
		_ = store.Close()
		if c.Drop {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for _, t := range []string{c.Name, c.Name + "_migrations"} {
				_, _ = pool.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{Schema, t}.Sanitize())
			}
		}
		pool.Close()
	}, nil
}

func openRedis(ctx context.Context, c Config) (backends.Store, func(), error) {
	client, err := OpenClient(ctx, c.RedisAddr)
	if err != nil {
		return nil, nil, err
	}
	store, err := redisstore.New(ctx, client, &redisstore.Config{KeyPrefix: c.Prefix()})
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return store, func() {
		if c.Drop {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = DeleteKeys(ctx, client, c.Prefix()+"*")
		}
		_ = client.Close()
	}, nil
}

// OpenPool connects to PostgreSQL and checks the connection.
func OpenPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres at %s: %w", redactURL(url), err)
	}
	return pool, nil
}

// OpenClient connects to Redis and checks the connection.
func OpenClient(ctx context.Context, addr string) (*redis.Client, error) {
	client := redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	return client, nil
}

// DeleteKeys deletes every key matching pattern (SCAN, then DEL).
func DeleteKeys(ctx context.Context, client redis.UniversalClient, pattern string) error {
	iter := client.Scan(ctx, 0, pattern, 500).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	return client.Del(ctx, keys...).Err()
}

// redactURL hides the password of a connection URL in error messages.
func redactURL(url string) string {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return "the given URL"
	}
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}
