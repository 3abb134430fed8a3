package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stagedoor/once/internal/testparallel"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// The test server: ONCE_POSTGRES_URL, or a local trust-auth default (see
// internal/testservers/serverenv). Without a server the tests skip, unless
// ONCE_REQUIRE_SERVERS=1 or CI is set, where they fail.

var (
	// testSchema is this run's own schema, created by Migrate in TestMain
	// and dropped at the end, so parallel runs never collide.
	testSchema string
	// serverErr is why the server is unusable, or nil.
	serverErr error
)

func databaseURL() string { return serverenv.PostgresURL() }

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// waitingTests is how many parallel tests run at once: the conformance
// suites' tests mostly wait on the server's clock (backendtest.Elapse)
// and on lock timeouts, not on the CPU.
const waitingTests = 8

func TestMain(m *testing.M) {
	testparallel.Default(waitingTests)
	testSchema = "once_test_" + randomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	pool, err := pgxpool.New(ctx, databaseURL())
	if err == nil {
		err = pool.Ping(ctx)
	}
	if err == nil {
		var s *Store
		if s, err = New(pool, &Config{Schema: testSchema}); err == nil {
			err = s.Migrate(ctx)
		}
	}
	cancel()
	serverErr = err
	code := m.Run()
	if pool != nil {
		if serverErr == nil {
			_, _ = pool.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{testSchema}.Sanitize()+" CASCADE")
		}
		pool.Close()
	}
	os.Exit(code)
}

// requireServer skips tb (or fails it in CI) when the server is unusable.
func requireServer(tb testing.TB) {
	tb.Helper()
	if serverErr == nil {
		return
	}
	msg := fmt.Sprintf("PostgreSQL at %s is not usable (%v); set ONCE_POSTGRES_URL", databaseURL(), serverErr)
	if serverenv.Required() {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// newPool returns a pool closed at the end of tb, optionally tuned by
// configure (simple protocol, tracer).
func newPool(tb testing.TB, configure func(*pgxpool.Config)) *pgxpool.Pool {
	tb.Helper()
	requireServer(tb)
	cfg, err := pgxpool.ParseConfig(databaseURL())
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = 20
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

func simpleProtocol(cfg *pgxpool.Config) {
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
}

// newStore returns a Store on pool over this run's shared schema.
func newStore(tb testing.TB, pool *pgxpool.Pool) *Store {
	tb.Helper()
	s, err := New(pool, &Config{Schema: testSchema})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// newTable migrates a fresh table in this run's schema, for tests that
// count or sweep every row of their table.
func newTable(tb testing.TB, pool *pgxpool.Pool, cfg Config) *Store {
	tb.Helper()
	cfg.Schema = testSchema
	cfg.Table = "t_" + randomSuffix()
	s, err := New(pool, &cfg)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s
}

// counter is a pgx.QueryTracer counting the statements sent through it.
type counter struct{ n atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// count returns how many statements fn sent.
func (c *counter) count(fn func()) int64 {
	before := c.n.Load()
	fn()
	return c.n.Load() - before
}
