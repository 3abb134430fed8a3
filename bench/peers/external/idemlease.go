//go:build ignore

package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/repenguin22/idemlease"
	"github.com/repenguin22/idemlease/pgstore"
	"github.com/repenguin22/idemlease/redistore"

	"github.com/stagedoor/once/bench/harness"
	"github.com/stagedoor/once/bench/peers"
)

// idemleasePeer is github.com/repenguin22/idemlease: Begin and Finish of
// its core, as its HTTP and gRPC adapters call them, over pgstore
// (database/sql with pgx's stdlib driver, on the run's pool; the table
// from pgstore.Schema) and over redistore (the run's go-redis client).
var idemleasePeer = peers.Peer{
	Name: "idemlease",
	Postgres: func(ctx context.Context, e *peers.Env) (*harness.Target, error) {
		db := stdlib.OpenDBFromPool(e.Pool)
		e.OnClose(func() { _ = db.Close() })
		if _, err := db.ExecContext(ctx, pgstore.Schema(pgstore.DefaultTable)); err != nil {
			return nil, err
		}
		return idemleaseTarget(pgstore.New(db)), nil
	},
	Redis: func(_ context.Context, e *peers.Env) (*harness.Target, error) {
		return idemleaseTarget(redistore.New(e.Redis, redistore.KeyPrefix(e.RedisPrefix+"idemlease:"))), nil
	},
}

// idemleaseOptions are the lease and the record's lifetime of every
// operation: those of the other peers.
var idemleaseOptions = idemlease.Options{LeaseTTL: harness.Lease, RecordTTL: harness.Retention}

// idemleaseTarget runs charge when Begin says Proceed and persists its
// encoded result with Finish; a replay is Begin answering Replay with the
// stored payload, which it decodes and checks.
func idemleaseTarget(s idemlease.Store) *harness.Target {
	t := &harness.Target{}
	t.First = func(ctx context.Context, key string) error {
		out, err := idemlease.Begin(ctx, s, key, harness.FpA, idemleaseOptions)
		if err != nil || out.Action != idemlease.Proceed {
			return fmt.Errorf("first execution of %s: %v, action %d", key, err, out.Action)
		}
		body, err := harness.RawResult(ctx)
		if err != nil {
			return err
		}
		lost, err := idemlease.Finish(ctx, s, key, out.Token, idemlease.Persist, body, idemleaseOptions)
		if err != nil || lost {
			return fmt.Errorf("finish of %s: %v, lease lost %v", key, err, lost)
		}
		return nil
	}
	t.Replay = func(ctx context.Context, key string) error {
		out, err := idemlease.Begin(ctx, s, key, harness.FpA, idemleaseOptions)
		if err != nil || out.Action != idemlease.Replay {
			return fmt.Errorf("replay of %s: %v, action %d", key, err, out.Action)
		}
		return harness.RawReplay(out.Payload)
	}
	return t
}
