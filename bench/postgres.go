package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
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
	s, err := postgres.New(r.pool, cfg)
	if err != nil {
		return nil, err
	}
	return s, s.Migrate(ctx)
}

func (r *pgRun) table(name string) string { return pgx.Identifier{r.schema, name}.Sanitize() }

func (r *pgRun) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = r.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{r.schema}.Sanitize()+" CASCADE")
	r.pool.Close()
}

// The tables of a PostgreSQL run: the library's, the same-statement
// target's (the library's schema, written by the library's statements
// without the library) and the seed baseline's own six-column table.
const (
	pgLibTable  = postgres.DefaultTable
	pgSameTable = "once_same"
	pgSeedTable = "seed_keys"
)

// setupPostgres returns the library over the postgres backend, the raw
// baseline (the seed's mechanism written minimally against pgx, in its own
// table: see rawPostgresTarget) and the same-statement target (the
// library's own statements sent with pgx, without the library), all on one
// pool, with the PostgreSQL statistics of each.
func setupPostgres(ctx context.Context, id string, conns int32) (_ *suite, err error) {
	r, err := openPostgres(ctx, id, conns)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	s, err := r.store(ctx, pgLibTable)
	if err != nil {
		return nil, err
	}
	lib, err := libraryTarget(ctx, s, "lib-"+id, nil)
	if err != nil {
		return nil, err
	}
	cached, err := cachedLibraryTarget(ctx, s, id)
	if err != nil {
		return nil, err
	}
	raw, err := rawPostgresTarget(ctx, r.pool, r.table(pgSeedTable), "raw-"+id)
	if err != nil {
		return nil, err
	}
	if _, err := r.store(ctx, pgSameTable); err != nil {
		return nil, err
	}
	same, err := sameStatementsTarget(ctx, r.pool, r.table(pgSameTable), "same-"+id)
	if err != nil {
		return nil, err
	}
	st := &pgStats{run: r, tables: map[string]string{"library": r.table(pgLibTable), "raw": r.table(pgSeedTable), "same statements": r.table(pgSameTable)}}
	return &suite{lib: lib, cached: cached, raw: raw, same: same, firstBegin: st.begin, firstEnd: st.end, notes: st.notes, cleanup: r.close}, nil
}

// pgClaimRow is a claim's answer: state 0 when insert_claim.sql
// inserted, else the row read_claim.sql read: its state, fingerprint and
// outcome, and whether its owner is the claim's; its timestamps are read
// and discarded, as the library reads them.
type pgClaimRow struct {
	state   int16
	fp      []byte
	outcome []byte
	own     bool
	steps   []byte // the checkpoints of a re-sent claim; nil here
}

func (r pgClaimRow) inserted() bool { return r.state == 0 }

// sameStatementsTarget sends the library's own claim and complete
// statements (internal/pgsql) with pgx on the same pool, one QueryRow each,
// without the library, encoding and decoding the payment as the raw
// baseline does (rawResult, rawReplay): the gap between it and the raw baseline is the
// schema's and the statements' cost, the gap between it and the library is
// the library's Go-side cost. Its claims take the order a Store settles on
// in a cell of one path: a first execution sends insert_claim.sql alone
// (insert first), a replay, an in-progress duplicate and a mismatch
// read_claim.sql alone (read first).
func sameStatementsTarget(ctx context.Context, pool *pgxpool.Pool, table, scope string) (*target, error) {
	t := &target{}
	q := pgsql.Render(table)
	leaseUS, retentionUS, holdUS := lease.Microseconds(), retention.Microseconds(), holdLease.Microseconds()
	insert := func(ctx context.Context, key string, fp []byte, owner string, leaseUS int64, lockTimeout string) (bool, error) {
		t.Trips.Add(1)
		tag, err := pool.Exec(ctx, q.InsertClaim, scope, key, fp, owner, leaseUS, retentionUS, lockTimeout)
		return tag.RowsAffected() == 1, err
	}
	read := func(ctx context.Context, key, owner string) (pgClaimRow, bool, error) {
		t.Trips.Add(1)
		var r pgClaimRow
		var leaseUntil, expiresAt, holdUntil, now, claimedAt pgtype.Timestamptz
		err := pool.QueryRow(ctx, q.ReadClaim, scope, key, owner).
			Scan(&r.state, &r.fp, &r.outcome, &r.own, &leaseUntil, &expiresAt, &holdUntil, &now, &claimedAt, &r.steps)
		if err == pgx.ErrNoRows {
			return r, false, nil
		}
		if err == nil && !expiresAt.Time.After(now.Time) {
			err = fmt.Errorf("same read claim of %s: the row expired", key)
		}
		return r, err == nil, err
	}
	claim := func(ctx context.Context, key string, fp []byte, owner string, leaseUS int64, insertFirst bool) (pgClaimRow, error) {
		if insertFirst {
			// The library's insert that goes first waits at most 1 ms for
			// a lock (then it reads first, two more statements); here it
			// waits as the insert after a read does, so that every claim
			// is one statement: on a loaded machine a new key's insert can
			// wait past 1 ms (a relation extension).
			inserted, err := insert(ctx, key, fp, owner, leaseUS, "5000ms")
			if err != nil || inserted {
				return pgClaimRow{}, err // state 0: inserted
			}
			r, found, err := read(ctx, key, owner)
			if err == nil && !found {
				err = fmt.Errorf("same claim of %s: no row after the insert's conflict", key)
			}
			return r, err
		}
		r, found, err := read(ctx, key, owner)
		if err != nil || found {
			return r, err
		}
		inserted, err := insert(ctx, key, fp, owner, leaseUS, "5000ms")
		if err == nil && !inserted {
			err = fmt.Errorf("same claim of %s: a row committed after the read", key)
		}
		return pgClaimRow{}, err
	}
	first := func(ctx context.Context, key string) error {
		owner := token()
		if r, err := claim(ctx, key, fpA, owner, leaseUS, true); err != nil || !r.inserted() {
			return fmt.Errorf("same claim: %v %+v", err, r)
		}
		body, err := rawResult(ctx)
		if err != nil {
			return err
		}
		t.Trips.Add(1)
		tag, err := pool.Exec(ctx, q.Complete, scope, key, owner, append([]byte{1, 1}, body...), retentionUS, pgsql.Slot(scope, key))
		if err != nil || tag.RowsAffected() != 1 {
			return fmt.Errorf("same complete: %v %v", err, tag)
		}
		return nil
	}
	if err := first(ctx, hotKey); err != nil {
		return nil, err
	}
	if r, err := claim(ctx, pendingKey, fpA, token(), holdUS, true); err != nil || !r.inserted() {
		return nil, fmt.Errorf("seed in-progress key: %v %+v", err, r)
	}
	var keys keySeq
	t.Ops[pathFirst] = func(ctx context.Context) error { return first(ctx, keys.Next("")) }
	find := func(ctx context.Context, key string, fp []byte, state int16) error {
		r, err := claim(ctx, key, fp, token(), leaseUS, false)
		if err != nil || r.inserted() || r.state != state ||
			bytes.Equal(r.fp, fp) != bytes.Equal(fp, fpA) {
			return fmt.Errorf("same claim of %s: %v %+v", key, err, r)
		}
		if state == 2 && bytes.Equal(fp, fpA) {
			if len(r.outcome) < 2 {
				return fmt.Errorf("same claim of %s: outcome %q", key, r.outcome)
			}
			return rawReplay(r.outcome[2:]) // after the envelope's two bytes
		}
		return nil
	}
	t.Ops[pathReplay] = func(ctx context.Context) error { return find(ctx, hotKey, fpA, 2) }
	t.Ops[pathInProgress] = func(ctx context.Context) error { return find(ctx, pendingKey, fpA, 1) }
	t.Ops[pathMismatch] = func(ctx context.Context) error { return find(ctx, hotKey, fpB, 2) }
	return t, nil
}
