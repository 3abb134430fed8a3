package faults

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/internal/testservers"
)

// viaProxy opens the store of backend behind a fresh proxy.
func viaProxy(t *testing.T, backend string, maxConns int) (*openedStore, *netProxy) {
	t.Helper()
	ctx := context.Background()
	spec := storeSpec{Backend: backend, LockTimeoutMS: 300, MaxConns: maxConns}
	switch backend {
	case "postgres":
		spec.Table = migrateTable(t, "faults_bh_")
		p := newProxy(t, pgHostPort(t, testservers.PostgresURL()))
		spec.Addr = pgWithHost(t, testservers.PostgresURL(), p.addr())
		st, err := spec.open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.close)
		return st, p
	case "mysql":
		spec.Table = migrateMySQL(t, "faults_bh_")
		p := newProxy(t, mysqlHostPort(t, mysqlDSN()))
		spec.Addr = mysqlWithAddr(t, mysqlDSN(), p.addr())
		st, err := spec.open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.close)
		return st, p
	default:
		r := startRedis(t)
		p := newProxy(t, r.addr())
		spec.Addr, spec.Prefix = p.addr(), "faults:bh:"
		st, err := spec.open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.close)
		return st, p
	}
}

// noDriverError fails if a driver's error type escaped the library.
func noDriverError(t *testing.T, err error) {
	t.Helper()
	var pgErr *pgconn.PgError
	var rErr redis.Error
	var myErr *mysql.MySQLError
	if errors.As(err, &pgErr) || errors.As(err, &rErr) || errors.As(err, &myErr) || errors.Is(err, mysql.ErrInvalidConn) {
		t.Errorf("a driver error escaped: %T in %v", err, err)
	}
}

// Fail closed: with the store blackholed (every byte to it dropped, the
// connection kept open) or refusing connections, Do returns a *StoreError
// and fn never runs. (SQLite has no network: a local file is not
// "unreachable".)
func TestBlackholedStoreRunsNoFn(t *testing.T) {
	for _, backend := range []string{"postgres", "redis", "mysql"} {
		t.Run(backend, func(t *testing.T) {
			st, p := viaProxy(t, backend, 0)
			scope := once.New(st.store, once.WithLease(time.Second)).Scope("bh")
			ctx := context.Background()
			if _, err := once.Do(ctx, scope, "warm", nil, func(context.Context) (int, error) { return 1, nil }); err != nil {
				t.Fatalf("warm-up: %v", err)
			}
			var runs atomic.Int64
			fn := func(context.Context) (int, error) { runs.Add(1); return 1, nil }
			calls, storeErrs := 0, 0
			try := func(key string, txMode bool) {
				cctx, cancel := context.WithTimeout(ctx, 400*time.Millisecond)
				defer cancel()
				var err error
				if txMode {
					_, err = once.DoTx(cctx, scope, key, nil, st.pg.BeginTx, func(ctx context.Context, _ pgx.Tx) (int, error) { return fn(ctx) })
				} else {
					_, err = once.Do(cctx, scope, key, nil, fn)
				}
				calls++
				var se *once.StoreError
				if errors.As(err, &se) { // the claim, or DoTx's begin
					storeErrs++
				} else {
					t.Errorf("key %s: want a store error, got %v", key, err)
				}
				noDriverError(t, err)
			}
			if err := p.add("blackhole", "timeout", "upstream", map[string]any{"timeout": 0}); err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				try("bh-"+string(rune('a'+i)), false)
				if backend == "postgres" {
					try("bhtx-"+string(rune('a'+i)), true)
				}
			}
			p.remove("blackhole")
			p.p.Stop() // connection refused
			for i := range 3 {
				try("down-"+string(rune('a'+i)), false)
			}
			if n := runs.Load(); n != 0 {
				t.Errorf("fn ran %d times while the store was unreachable", n)
			}
			summary.note("blackholed / refused %s store: %d Do and DoTx calls, %d store errors, %d fn runs", backend, calls, storeErrs, runs.Load())
		})
	}
}
