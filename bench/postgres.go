package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/backends/postgres"
	"github.com/stagedoor/once/internal/pgsql"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

func postgresURL() string { return serverenv.PostgresURL() }

// pgRun is this run's PostgreSQL: a pool and a schema of its own, dropped
// by close.
type pgRun struct {
	pool   *pgxpool.Pool
	schema string
}

func openPostgres(ctx context.Context, id string, conns int32) (*pgRun, error) {
	cfg, err := pgxpool.ParseConfig(postgresURL())
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = conns
	cfg.MinConns = conns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, err
	}
	return &pgRun{pool: pool, schema: "once_bench_" + id}, nil
}

// store migrates table in the run's schema and returns a Store over it.
func (r *pgRun) store(ctx context.Context, table string) (*postgres.Store, error) {
	cfg := &postgres.Config{Schema: r.schema, Table: table}
	if err := postgres.Migrate(ctx, r.pool, cfg); err != nil {
		return nil, err
	}
	return postgres.New(r.pool, cfg)
}

func (r *pgRun) table(name string) string { return pgx.Identifier{r.schema, name}.Sanitize() }

func (r *pgRun) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = r.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{r.schema}.Sanitize()+" CASCADE")
	r.pool.Close()
}

// setupPostgres returns the library over the postgres backend and its
// baseline: the backend's own claim and complete statements (see
// internal/pgsql) sent with pgx on the same pool, one QueryRow each.
func setupPostgres(ctx context.Context, id string, conns int32) (lib, raw *target, cleanup func(), err error) {
	r, err := openPostgres(ctx, id, conns)
	if err != nil {
		return nil, nil, nil, err
	}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	s, err := r.store(ctx, postgres.DefaultTable)
	if err != nil {
		return nil, nil, nil, err
	}
	lib, err = libraryTarget(ctx, s, "lib-"+id)
	if err != nil {
		return nil, nil, nil, err
	}
	raw, err = rawPostgresTarget(ctx, r.pool, r.table(postgres.DefaultTable), "raw-"+id)
	if err != nil {
		return nil, nil, nil, err
	}
	return lib, raw, r.close, nil
}

// pgClaimRow is the row of the claim statement.
type pgClaimRow struct {
	inserted bool
	tookOver *bool
	found    bool
	live     bool
	state    int16
	fp       []byte
	outcome  []byte
	leaseUS  int64
}

func rawPostgresTarget(ctx context.Context, pool *pgxpool.Pool, table, scope string) (*target, error) {
	t := &target{}
	claimSQL, completeSQL := fmt.Sprintf(pgsql.Claim, table), fmt.Sprintf(pgsql.Complete, table)
	leaseUS, retentionUS, holdUS := lease.Microseconds(), retention.Microseconds(), holdLease.Microseconds()
	claim := func(ctx context.Context, key string, fp []byte, owner string, leaseUS int64) (pgClaimRow, error) {
		t.trips.Add(1)
		var r pgClaimRow
		err := pool.QueryRow(ctx, claimSQL, scope, key, fp, owner, leaseUS, retentionUS).
			Scan(&r.inserted, &r.tookOver, &r.found, &r.live, &r.state, &r.fp, &r.outcome, &r.leaseUS)
		return r, err
	}
	complete := func(ctx context.Context, key, owner string) error {
		t.trips.Add(1)
		var ok bool
		if err := pool.QueryRow(ctx, completeSQL, scope, key, owner, storedOutcome, retentionUS).Scan(&ok); err != nil || !ok {
			return fmt.Errorf("raw complete: %v %v", err, ok)
		}
		return nil
	}
	first := func(ctx context.Context, key string) error {
		owner := token()
		if r, err := claim(ctx, key, fpA, owner, leaseUS); err != nil || !r.inserted {
			return fmt.Errorf("raw claim: %v %+v", err, r)
		}
		return complete(ctx, key, owner)
	}
	if err := first(ctx, hotKey); err != nil {
		return nil, err
	}
	if r, err := claim(ctx, pendingKey, fpA, token(), holdUS); err != nil || !r.inserted {
		return nil, fmt.Errorf("seed in-progress key: %v %+v", err, r)
	}
	var keys keySeq
	t.ops[pathFirst] = func(ctx context.Context) error { return first(ctx, keys.next("")) }
	find := func(ctx context.Context, key string, fp []byte, state int16) error {
		r, err := claim(ctx, key, fp, token(), leaseUS)
		if err != nil || r.inserted || r.tookOver != nil || !r.live || r.state != state ||
			bytes.Equal(r.fp, fp) != bytes.Equal(fp, fpA) {
			return fmt.Errorf("raw claim of %s: %v %+v", key, err, r)
		}
		return nil
	}
	t.ops[pathReplay] = func(ctx context.Context) error { return find(ctx, hotKey, fpA, 2) }
	t.ops[pathInProgress] = func(ctx context.Context) error { return find(ctx, pendingKey, fpA, 1) }
	t.ops[pathMismatch] = func(ctx context.Context) error { return find(ctx, hotKey, fpB, 2) }
	return t, nil
}
