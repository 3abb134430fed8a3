package peers

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/backends/redisstore"
	"github.com/stagedoor/once/bench/harness"
)

// Peer is one library measured against raw. Postgres and Redis build its
// target on the run's servers (nil where it has no store for one); the
// target's First and Replay must check every answer (harness.Target).
type Peer struct {
	Name            string
	Postgres, Redis func(ctx context.Context, e *Env) (*harness.Target, error)
}

// Raw is the seed's mechanism written against the driver, the ratios'
// denominator (harness.RawPostgresTarget, harness.RawRedisTarget).
var Raw = Peer{
	Name: "raw",
	Postgres: func(ctx context.Context, e *Env) (*harness.Target, error) {
		return harness.RawPostgresTarget(ctx, e.Pool, pgx.Identifier{"seed_keys"}.Sanitize(), "raw-"+e.ID)
	},
	Redis: func(ctx context.Context, e *Env) (*harness.Target, error) {
		return harness.RawRedisTarget(ctx, e.Redis, e.RedisPrefix+"raw:")
	},
}

// Once is once.Do over the postgres and redisstore backends with their
// defaults (harness.LibraryTarget).
var Once = Peer{
	Name: "once",
	Postgres: func(ctx context.Context, e *Env) (*harness.Target, error) {
		s, err := postgres.New(e.Pool, nil)
		if err != nil {
			return nil, err
		}
		if err := s.Migrate(ctx); err != nil {
			return nil, err
		}
		return harness.LibraryTarget(ctx, s, "once-"+e.ID, nil)
	},
	Redis: func(ctx context.Context, e *Env) (*harness.Target, error) {
		s, err := redisstore.New(ctx, e.Redis, &redisstore.Config{KeyPrefix: e.RedisPrefix + "once:", EvictionPolicyCheck: redisstore.EvictionIgnore})
		if err != nil {
			return nil, err
		}
		return harness.LibraryTarget(ctx, s, "once-"+e.ID, nil)
	},
}

// Ran records which keys ran their function, so that a peer without an
// answer that says "executed" or "replayed" can still be checked: the
// function marks its key, the first execution takes the mark, and a
// replay finds none.
type Ran struct{ m sync.Map }

// Mark notes that key's function ran.
func (r *Ran) Mark(key string) { r.m.Store(key, struct{}{}) }

// Take reports whether key's function ran since the last Take.
func (r *Ran) Take(key string) bool { _, ok := r.m.LoadAndDelete(key); return ok }

// CheckFirst is the check of a first execution of key that returned p.
func (r *Ran) CheckFirst(key string, p harness.Payment, err error) error {
	if ran := r.Take(key); err != nil || !ran || p != harness.ThePayment {
		return fmt.Errorf("first execution of %s: %v, ran %v, %+v", key, err, ran, p)
	}
	return nil
}

// CheckReplay is the check of a replay of key that returned p.
func (r *Ran) CheckReplay(key string, p harness.Payment, err error) error {
	if err != nil || r.Take(key) || p != harness.ThePayment {
		return fmt.Errorf("replay of %s: %v, %+v (or the function ran)", key, err, p)
	}
	return nil
}
