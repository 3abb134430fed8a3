package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

func newConn(t *testing.T) *pgx.Conn {
	t.Helper()
	requireServer(t)
	conn, err := pgx.Connect(context.Background(), databaseURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestConformanceOnConn runs the whole suite on a Store over one
// *pgx.Conn: New detects it and serialises the Store's statements, so the
// suite's concurrent cases pass on a connection pgx forbids sharing. Such
// a Store cannot LISTEN (its Watch returns ErrWatchUnsupported), so it runs
// as a store without a Watcher: the suite skips the watch cases, as the
// core falls back to polling.
func TestConformanceOnConn(t *testing.T) {
	conn := newConn(t)
	s, err := New(conn, &Config{Schema: testSchema})
	require.NoError(t, err)
	_, serial := s.db.(*serialDB)
	require.True(t, serial)
	_, _, err = s.Watch(context.Background(), "s", "k")
	require.ErrorIs(t, err, ErrWatchUnsupported)
	polling := struct {
		backends.Store
		backends.Admin
	}{s, s}
	backendtest.Run(t, func(testing.TB) backends.Store { return polling })
}

// tracedPool is a user's wrapper of a pool, as a tracing or metrics layer
// would be: it satisfies DB without being a *pgxpool.Pool.
type tracedPool struct {
	*pgxpool.Pool
	statements int
}

func (p *tracedPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	p.statements++ // the test calls the Store from one goroutine
	return p.Pool.QueryRow(ctx, sql, args...)
}

func (p *tracedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	p.statements++
	return p.Pool.Exec(ctx, sql, args...)
}

func TestWrapperAsDB(t *testing.T) {
	w := &tracedPool{Pool: newPool(t, nil)}
	cfg := &Config{Schema: testSchema, Table: "w_" + randomSuffix()}
	s, err := New(w, cfg)
	require.NoError(t, err)
	require.NoError(t, s.Migrate(context.Background()))
	_, serial := s.db.(*serialDB)
	require.False(t, serial, "a wrapper is taken as safe for concurrent use")
	pinOrder(s, true)
	r, err := s.Claim(context.Background(), claimParams("s", "k"))
	require.NoError(t, err)
	require.True(t, r.Claimed)
	require.Equal(t, 1, w.statements)

	single, err := New(w, &Config{Schema: testSchema, Table: cfg.Table, SingleConnection: true})
	require.NoError(t, err)
	_, serial = single.db.(*serialDB)
	require.True(t, serial)
}

func TestTxRefusedAsDB(t *testing.T) {
	pool := newPool(t, nil)
	tx, err := pool.Begin(context.Background())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	_, err = New(tx, &Config{Schema: testSchema})
	require.ErrorIs(t, err, ErrTxAsDB)
}

// tagDropper is a wrapper whose Exec runs the statement but drops the
// driver's command tag.
type tagDropper struct{ *pgxpool.Pool }

func (p tagDropper) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	_, err := p.Pool.Exec(ctx, sql, args...)
	return pgconn.CommandTag{}, err
}

// TestWrapperDroppingTheCommandTag: a claim's insert, a renewal and a
// checkpoint answer by their command tag; a DB whose Exec loses it gets
// an *Error, never a claim read as taken or a write read as fenced out.
func TestWrapperDroppingTheCommandTag(t *testing.T) {
	pool := newPool(t, nil)
	cfg := &Config{Schema: testSchema, Table: "t_" + randomSuffix()}
	good, err := New(pool, cfg)
	require.NoError(t, err)
	require.NoError(t, good.Migrate(context.Background()))
	s, err := New(tagDropper{pool}, cfg)
	require.NoError(t, err)
	pinOrder(s, true)
	ctx := context.Background()
	_, err = s.Claim(ctx, claimParams("s", "k"))
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Contains(t, e.Error(), "unexpected command tag")

	p := claimParams("s", "k2")
	r, err := good.Claim(ctx, p)
	require.NoError(t, err)
	require.True(t, r.Claimed)
	_, err = s.Renew(ctx, backends.RenewParams{Scope: "s", Key: "k2", Owner: p.Owner, Lease: time.Hour})
	require.ErrorAs(t, err, &e)
	require.Contains(t, e.Error(), "unexpected command tag")
	_, err = s.Checkpoint(ctx, backends.CheckpointParams{Scope: "s", Key: "k2", Owner: p.Owner, Steps: []byte("s")})
	require.ErrorAs(t, err, &e)
	require.Contains(t, e.Error(), "unexpected command tag")
}
