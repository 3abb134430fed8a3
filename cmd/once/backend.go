package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
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
)

// selectBackend decides the store from the flags, without contacting it:
// exactly one of --postgres, --redis, --redis-cluster, or else
// $ONCE_POSTGRES_URL. A store flag counts as given when it is on the
// command line, whatever its value: an empty one (--redis "$UNSET") is a
// usage error, never a fall back to $ONCE_POSTGRES_URL. Schema and table
// names are checked here too.
func (c *cli) selectBackend() (kind, error) {
	n := 0
	for _, name := range []string{"postgres", "redis", "redis-cluster"} {
		if c.given[name] {
			n++
		}
	}
	switch {
	case n > 1:
		return 0, usagef("choose one store: --postgres, --redis or --redis-cluster")
	case c.given["postgres"] && c.Postgres == "":
		return 0, usagef("--postgres is empty: give a URL (an unset shell variable?)")
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
			return 0, usagef("no store: give --postgres URL (or set ONCE_POSTGRES_URL), --redis ADDR or --redis-cluster ADDRS")
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
	return &postgres.Config{Schema: c.Schema, Table: c.Table}
}

// conn is an open store; Close releases its pool or client.
type conn struct {
	kind  kind
	store backends.Store
	admin backends.Admin

	pool *pgxpool.Pool         // kindPostgres
	pg   *postgres.Store       // kindPostgres
	rdb  redis.UniversalClient // kindRedis
	rs   *redisstore.Store     // kindRedis
}

// open connects to the store the flags select. A Redis store is contacted
// (redisstore.New loads its scripts); a PostgreSQL pool connects lazily.
func (e *env) open(ctx context.Context, k kind) (*conn, error) {
	c := e.cli
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
		return &conn{kind: k, store: pg, admin: pg, pool: pool, pg: pg}, nil
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
