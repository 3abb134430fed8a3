package faults

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	mysqlstore "github.com/stagedoor/once/backends/mysqlstore"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
	sqlitestore "github.com/stagedoor/once/backends/sqlitestore"
)

// storeSpec says how a process reaches the records store.
type storeSpec struct {
	Backend string `json:"backend"` // "postgres", "redis", "mysql" or "sqlite"
	// Addr is a PostgreSQL URL, a Redis address, a MariaDB DSN (possibly
	// a proxy's) or a SQLite file path.
	Addr   string `json:"addr"`
	Table  string `json:"table,omitempty"`  // PostgreSQL or MariaDB records table
	Prefix string `json:"prefix,omitempty"` // Redis key prefix
	// AppName is the PostgreSQL application_name of the store's sessions,
	// so that the driver can terminate them.
	AppName       string `json:"app,omitempty"`
	LockTimeoutMS int64  `json:"lock_timeout_ms,omitempty"`
	// ClaimOrder picks a MariaDB store's claim: "" (the default, INSERT
	// IGNORE first), "read-first" (Config.ReadFirstClaims) or "one-call"
	// (Config.OneRoundTripClaims, the stored procedure).
	ClaimOrder string `json:"claim_order,omitempty"`
	// MaxConns caps the store's connections (PostgreSQL pool or Redis
	// pool); 4 when zero.
	MaxConns int `json:"max_conns,omitempty"`
}

// openedStore is a store and the clients behind it.
type openedStore struct {
	store backends.Store
	pg    *postgres.Store
	// mysql and sqlite are the SQL stores other than PostgreSQL's, for
	// their BeginTx.
	mysql  *mysqlstore.Store
	sqlite *sqlitestore.Store
	pool   *pgxpool.Pool
	rdb    *redis.Client
	// closeStore closes a store that owns resources (postgres's and
	// redisstore's Watch connection and its goroutines, mysqlstore's
	// prepared statements, sqlitestore's file).
	closeStore func() error
	db         *sql.DB // MariaDB
}

// close closes the store first, while the pool or client its Close may
// still use is open, then the clients behind it.
func (o *openedStore) close() {
	if o.closeStore != nil {
		_ = o.closeStore()
	}
	if o.pool != nil {
		o.pool.Close()
	}
	if o.rdb != nil {
		_ = o.rdb.Close()
	}
	if o.db != nil {
		_ = o.db.Close()
	}
}

// newMySQL opens a small MariaDB pool on dsn with short dial, read and
// write timeouts, so that a cut or blackholed connection fails the call
// instead of hanging it.
func newMySQL(dsn string, maxConns int) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	return db, nil
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
		return &openedStore{store: st, pg: st, pool: pool, closeStore: st.Close}, nil
	case "redis":
		rdb := newRedis(s.Addr)
		rdb.Options().PoolSize = s.conns()
		st, err := redisstore.New(ctx, rdb, &redisstore.Config{KeyPrefix: s.Prefix, EvictionPolicyCheck: redisstore.EvictionIgnore})
		if err != nil {
			_ = rdb.Close()
			return nil, err
		}
		return &openedStore{store: st, rdb: rdb, closeStore: st.Close}, nil
	case "mysql":
		db, err := newMySQL(s.Addr, s.conns())
		if err != nil {
			return nil, err
		}
		st, err := mysqlstore.New(db, &mysqlstore.Config{Table: s.Table, ReadFirstClaims: s.ClaimOrder == "read-first", OneRoundTripClaims: s.ClaimOrder == "one-call", LockTimeout: time.Duration(s.LockTimeoutMS) * time.Millisecond})
		if err != nil {
			_ = db.Close()
			return nil, err
		}
		return &openedStore{store: st, mysql: st, closeStore: st.Close, db: db}, nil
	case "sqlite":
		// Every process of a scenario opens the same file, as several
		// processes sharing one SQLite file do (see the package doc of
		// sqlitestore: correct, writes serialised by the file's lock).
		st, err := sqlitestore.New(s.Addr, &sqlitestore.Config{Table: s.Table})
		if err != nil {
			return nil, err
		}
		if err := st.Migrate(ctx); err != nil {
			_ = st.Close()
			return nil, err
		}
		return &openedStore{store: st, sqlite: st, closeStore: st.Close}, nil
	}
	return nil, fmt.Errorf("unknown backend %q", s.Backend)
}

func (s storeSpec) conns() int {
	if s.MaxConns > 0 {
		return s.MaxConns
	}
	return 4
}
