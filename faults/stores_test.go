package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
)

// storeSpec says how a process reaches the records store.
type storeSpec struct {
	Backend string `json:"backend"` // "postgres" or "redis"
	// Addr is a PostgreSQL URL or a Redis address (possibly a proxy's).
	Addr   string `json:"addr"`
	Table  string `json:"table,omitempty"`  // PostgreSQL records table
	Prefix string `json:"prefix,omitempty"` // Redis key prefix
	// AppName is the PostgreSQL application_name of the store's sessions,
	// so that the driver can terminate them.
	AppName       string `json:"app,omitempty"`
	LockTimeoutMS int64  `json:"lock_timeout_ms,omitempty"`
	// MaxConns caps the store's connections (PostgreSQL pool or Redis
	// pool); 4 when zero.
	MaxConns int `json:"max_conns,omitempty"`
}

// openedStore is a store and the clients behind it.
type openedStore struct {
	store backends.Store
	pg    *postgres.Store
	pool  *pgxpool.Pool
	rdb   *redis.Client
}

func (o *openedStore) close() {
	if o.pool != nil {
		o.pool.Close()
	}
	if o.rdb != nil {
		_ = o.rdb.Close()
	}
}

// newPool opens a small pool with an application_name and short timeouts.
func newPool(ctx context.Context, url, app string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = maxConns
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	if app != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = app
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

func newRedis(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, PoolSize: 8,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
	})
}

func (s storeSpec) open(ctx context.Context) (*openedStore, error) {
	switch s.Backend {
	case "postgres":
		pool, err := newPool(ctx, s.Addr, s.AppName, int32(s.conns()))
		if err != nil {
			return nil, err
		}
		st, err := postgres.New(pool, &postgres.Config{Table: s.Table, LockTimeout: time.Duration(s.LockTimeoutMS) * time.Millisecond})
		if err != nil {
			pool.Close()
			return nil, err
		}
		return &openedStore{store: st, pg: st, pool: pool}, nil
	case "redis":
		rdb := newRedis(s.Addr)
		rdb.Options().PoolSize = s.conns()
		st, err := redisstore.New(ctx, rdb, &redisstore.Config{KeyPrefix: s.Prefix, EvictionPolicyCheck: redisstore.EvictionIgnore})
		if err != nil {
			_ = rdb.Close()
			return nil, err
		}
		return &openedStore{store: st, rdb: rdb}, nil
	}
	return nil, fmt.Errorf("unknown backend %q", s.Backend)
}

func (s storeSpec) conns() int {
	if s.MaxConns > 0 {
		return s.MaxConns
	}
	return 4
}
