package peers

import (
	"context"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// Env is one run's servers, shared by every peer.
type Env struct {
	// ID names the run's database, key prefix and scopes.
	ID string
	// PostgresURL is the run's own database (once_peers_<ID>), created for
	// the run and dropped at its end; Pool is a pool of Conns connections
	// on it, for peers that take a pgx pool.
	PostgresURL string
	Pool        *pgxpool.Pool
	Conns       int32
	// Redis is a client of the Redis server; every peer keeps its keys
	// under RedisPrefix (deleted at the end).
	Redis       *redis.Client
	RedisPrefix string
	// Stmts, while a peer's target is built, is its statement counter:
	// pools opened by NewPool count into it what no operation's context
	// attributes (a peer's own pool, as DBOS's).
	Stmts   *atomic.Int64
	closers []func()
}

// OnClose registers f to run when the run ends, before the database is
// dropped (last registered, first run).
func (e *Env) OnClose(f func()) { e.closers = append(e.closers, f) }

func (e *Env) close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
	e.closers = nil
}

// NewPool opens a pool of e.Conns connections on the run's database.
func (e *Env) NewPool(ctx context.Context) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(e.PostgresURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns, cfg.MinConns = e.Conns, e.Conns
	cfg.ConnConfig.Tracer = stmtTracer{own: e.Stmts}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	e.OnClose(pool.Close)
	return pool, pool.Ping(ctx)
}

// openPostgres creates the run's database and a pool on it. The database
// is dropped when e closes, after every closer registered later (pools,
// DBOS).
func openPostgres(ctx context.Context, e *Env) error {
	admin, err := pgx.Connect(ctx, serverenv.PostgresURL())
	if err != nil {
		return err
	}
	name := "once_peers_" + e.ID
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		admin.Close(ctx)
		return err
	}
	e.OnClose(func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = admin.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
		admin.Close(dctx)
	})
	u, err := url.Parse(serverenv.PostgresURL())
	if err != nil {
		return err
	}
	u.Path = "/" + name
	e.PostgresURL = u.String()
	if e.Pool, err = e.NewPool(ctx); err != nil {
		return fmt.Errorf("pool on %s: %w", name, err)
	}
	return nil
}
