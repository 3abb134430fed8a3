package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/mysqlstore"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/backends/sqlitestore"
)

// go-redis logs dial failures with the driver's raw messages on the
// process's stderr; the CLI reports the store's translated errors instead.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// kind is the store a command line selects.
type kind uint8

const (
	kindPostgres kind = iota + 1
	kindRedis
	kindMySQL
	kindSQLite
)

// sql reports a store with a records table: PostgreSQL, MariaDB/MySQL or
// SQLite.
func (k kind) sql() bool { return k != kindRedis }

// storeFlags are the flags that select a store, one of which a command
// line gives (or else $ONCE_POSTGRES_URL).
var storeFlags = []string{"postgres", "mysql", "sqlite", "redis", "redis-cluster"}

// selectBackend decides the store from the flags, without contacting it:
// exactly one of --postgres, --mysql, --sqlite, --redis, --redis-cluster,
// or else $ONCE_POSTGRES_URL. A store flag counts as given when it is on the
// command line, whatever its value: an empty one (--redis "$UNSET") is a
// usage error, never a fall back to $ONCE_POSTGRES_URL. Schema and table
// names are checked here too.
func (c *cli) selectBackend() (kind, error) {
	n := 0
	for _, name := range storeFlags {
		if c.given[name] {
			n++
		}
	}
	switch {
	case n > 1:
		return 0, usagef("choose one store: --postgres, --mysql, --sqlite, --redis or --redis-cluster")
	case c.given["postgres"] && c.Postgres == "":
		return 0, usagef("--postgres is empty: give a URL (an unset shell variable?)")
	case c.given["mysql"] && c.MySQL == "":
		return 0, usagef("--mysql is empty: give a DSN (an unset shell variable?)")
	case c.given["sqlite"] && c.SQLite == "":
		return 0, usagef("--sqlite is empty: give the database file (an unset shell variable?)")
	case c.given["mysql"]:
		if _, err := mysqlstore.New(nil, c.mysqlConfig()); err != nil {
			return 0, usage(err) // a *mysqlstore.IdentifierError
		}
		return kindMySQL, nil
	case c.given["sqlite"]:
		return kindSQLite, nil
	case c.given["redis"] && c.Redis == "":
		return 0, usagef("--redis is empty: give host:port or a redis:// URL (an unset shell variable?)")
	case c.given["redis-cluster"]:
		if len(c.RedisCluster) == 0 || slices.Contains(c.RedisCluster, "") {
			return 0, usagef("--redis-cluster has an empty address: give host:port[,host:port...] (an unset shell variable?)")
		}
		for _, a := range c.RedisCluster {
			if strings.Contains(a, "@") || strings.Contains(a, "://") {
				return 0, usagef("--redis-cluster takes host:port seeds, not URLs or credentials: the CLI cannot authenticate to a Redis Cluster")
			}
		}
		return kindRedis, nil
	case c.given["redis"]:
		if _, err := c.redisOptions(); err != nil {
			return 0, err
		}
		return kindRedis, nil
	case !c.given["postgres"]:
		c.Postgres = os.Getenv("ONCE_POSTGRES_URL")
		if c.Postgres == "" {
			return 0, usagef("no store: give --postgres URL (or set ONCE_POSTGRES_URL), --mysql DSN, --sqlite FILE, --redis ADDR or --redis-cluster ADDRS")
		}
	}
	if _, err := postgres.New(nil, c.pgConfig()); err != nil {
		return 0, usage(err) // an *postgres.IdentifierError
	}
	return kindPostgres, nil
}

// redisOptions are the client options of --redis: a host:port address, or
// a redis://, rediss:// (TLS) or unix:// URL with user, password and
// database (redis.ParseURL). A parse error never quotes the flag, which
// may hold a password.
func (c *cli) redisOptions() (*redis.Options, error) {
	if !strings.Contains(c.Redis, "://") {
		if strings.Contains(c.Redis, "@") {
			return nil, usagef("invalid --redis address: give host:port, or a redis://user:password@host:port/db URL for credentials")
		}
		return &redis.Options{Addr: c.Redis}, nil
	}
	opts, err := redis.ParseURL(c.Redis)
	if err != nil {
		return nil, usagef("invalid --redis URL (expected redis://[user:password@]host:port[/db], rediss://... for TLS, or unix:///path)")
	}
	return opts, nil
}

func (c *cli) pgConfig() *postgres.Config {
	return &postgres.Config{Schema: c.Schema, Table: c.Table, SweepBatchSize: c.sweepBatch}
}

func (c *cli) mysqlConfig() *mysqlstore.Config {
	return &mysqlstore.Config{Table: c.Table, SweepBatchSize: c.sweepBatch}
}

func (c *cli) sqliteConfig() *sqlitestore.Config {
	return &sqlitestore.Config{Table: c.Table, SweepBatchSize: c.sweepBatch}
}

// tableName is the records table of a SQL store k, quoted as its
// dialect quotes it, for output.
func (c *cli) tableName(k kind) string {
	switch k {
	case kindMySQL:
		return "`" + c.Table + "`"
	case kindSQLite:
		return `"` + c.Table + `"`
	}
	return pgTable(c)
}

// sqlStore is what migrate and sweep need of a SQL store.
type sqlStore interface {
	Migrate(ctx context.Context) error
	Sweep(ctx context.Context) (int64, error)
}

// conn is an open store; Close releases its pool or client.
type conn struct {
	kind  kind
	store backends.Store
	admin backends.Admin
	sql   sqlStore // a SQL store's

	pool *pgxpool.Pool         // kindPostgres
	pg   *postgres.Store       // kindPostgres
	rdb  redis.UniversalClient // kindRedis
	rs   *redisstore.Store     // kindRedis
	db   *sql.DB               // kindMySQL
	my   *mysqlstore.Store     // kindMySQL
	lite *sqlitestore.Store    // kindSQLite
}

// open connects to the store the flags select. A Redis store is contacted
// (redisstore.New loads its scripts); a PostgreSQL pool and a MariaDB/MySQL
// pool connect lazily; a SQLite file must exist (migrate excepted, which
// creates it).
func (e *env) open(ctx context.Context, k kind) (*conn, error) {
	c := e.cli
	switch k {
	case kindMySQL:
		return c.openMySQL()
	case kindSQLite:
		return c.openSQLite()
	}
	if k == kindPostgres {
		cfg, err := pgxpool.ParseConfig(c.Postgres)
		if err != nil {
			// The parser's message can quote the URL, password included.
			return nil, usagef("invalid --postgres URL (expected postgres://user@host:port/db?options)")
		}
		cfg.MaxConns = 2
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, errors.New("cannot create the PostgreSQL connection pool")
		}
		pg, err := postgres.New(pool, c.pgConfig())
		if err != nil {
			pool.Close()
			return nil, usage(err)
		}
		return &conn{kind: k, store: pg, admin: pg, sql: pg, pool: pool, pg: pg}, nil
	}
	var rdb redis.UniversalClient
	var addr string
	if len(c.RedisCluster) > 0 {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.RedisCluster})
	} else {
		opts, err := c.redisOptions()
		if err != nil {
			return nil, err
		}
		addr = opts.Addr // never the URL: it may hold a password
		rdb = redis.NewClient(opts)
	}
	rs, err := redisstore.New(ctx, rdb, &redisstore.Config{
		KeyPrefix:           c.Prefix,
		EvictionPolicyCheck: redisstore.EvictionIgnore, // `once check` reports it
	})
	if err != nil {
		_ = rdb.Close()
		var ce *redisstore.ClusterModeError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("%w (with this command: --redis-cluster %s)", err, addr)
		}
		return nil, err
	}
	return &conn{kind: k, store: rs, admin: rs, rdb: rdb, rs: rs}, nil
}

// notListerError reports that the store of a command that lists (once
// list) or counts (once stats) records does not implement backends.Lister
// (exit status 1).
type notListerError struct {
	// Op is "list" or "count".
	Op string
	// Store is the store's Go type, e.g. "*postgres.Store".
	Store string
}

func (e *notListerError) Error() string {
	return "this store cannot " + e.Op + " records (" + e.Store + " does not implement backends.Lister)"
}

// lister returns the store as a backends.Lister, or a *notListerError for
// op ("list" or "count") when it is not one.
func (c *conn) lister(op string) (backends.Lister, error) {
	l, ok := c.store.(backends.Lister)
	if !ok {
		return nil, &notListerError{Op: op, Store: fmt.Sprintf("%T", c.store)}
	}
	return l, nil
}

// Close closes the store (its waiting connection, if any: the pool does
// not count the connection it lends to Watch), then releases the
// connections.
func (c *conn) Close() {
	if c.pg != nil {
		_ = c.pg.Close()
	}
	if c.rs != nil {
		_ = c.rs.Close()
	}
	if c.pool != nil {
		c.pool.Close()
	}
	if c.rdb != nil {
		_ = c.rdb.Close()
	}
	if c.my != nil {
		_ = c.my.Close()
	}
	if c.db != nil {
		_ = c.db.Close()
	}
	if c.lite != nil {
		_ = c.lite.Close()
	}
}

// openMySQL opens a pool on --mysql's DSN (go-sql-driver/mysql form).
func (c *cli) openMySQL() (*conn, error) {
	cfg, err := mysql.ParseDSN(c.MySQL)
	if err != nil {
		// The parser's message can quote the DSN, password included.
		return nil, usagef("invalid --mysql DSN (expected user:password@tcp(host:port)/db?options)")
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, usagef("invalid --mysql DSN (expected user:password@tcp(host:port)/db?options)")
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(2)
	my, err := mysqlstore.New(db, c.mysqlConfig())
	if err != nil {
		_ = db.Close()
		return nil, usage(err)
	}
	return &conn{kind: kindMySQL, store: my, admin: my, sql: my, db: db, my: my}, nil
}

// openSQLite opens --sqlite's file, which must exist unless create (the
// file of a migrate).
func (c *cli) openSQLite() (*conn, error) {
	if !c.createFile {
		if _, err := os.Stat(c.SQLite); err != nil {
			return nil, fmt.Errorf("no SQLite database at %s: %w (once migrate creates one)", quoteText(c.SQLite), errors.Unwrap(err))
		}
	}
	lite, err := sqlitestore.New(c.SQLite, c.sqliteConfig())
	if err != nil {
		return nil, usage(err)
	}
	return &conn{kind: kindSQLite, store: lite, admin: lite, sql: lite, lite: lite}, nil
}

// connect opens the store of kind k under the command's timeout. done
// closes the connection and ends the timeout.
func (e *env) connect(k kind) (ctx context.Context, c *conn, done func(), err error) {
	ctx, cancel := e.bounded()
	c, err = e.open(ctx, k)
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	return ctx, c, func() { c.Close(); cancel() }, nil
}
