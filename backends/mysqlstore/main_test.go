package mysqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/stagedoor/once/internal/testparallel"
	"github.com/stagedoor/once/internal/testservers/serverenv"
)

// The test server: ONCE_MYSQL_DSN, or the local MariaDB default. Without a
// server the tests skip, unless serverenv.Required (ONCE_REQUIRE_SERVERS=1
// or CI set), where they fail.
const defaultDSN = "root@tcp(127.0.0.1:3306)/test?parseTime=true"

var (
	// testTable is this run's own records table, created by Migrate in
	// TestMain and dropped (with its procedures) at the end, so parallel
	// runs never collide.
	testTable string
	// serverErr is why the server is unusable, or nil.
	serverErr error
	// created lists the tables this run migrated, to drop at the end.
	created []string
)

func dsn() string {
	if d := os.Getenv("ONCE_MYSQL_DSN"); d != "" {
		return d
	}
	return defaultDSN
}

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
	// The driver logs a killed connection's EOF; the tests that kill one
	// check the error they get instead.
	_ = mysql.SetLogger(log.New(io.Discard, "", 0))
	testTable = "once_test_" + randomSuffix()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	db, err := sql.Open("mysql", dsn())
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err == nil {
		err = migrateTable(ctx, db, testTable)
	}
	cancel()
	serverErr = err
	code := m.Run()
	if db != nil {
		for _, table := range created {
			dropTable(db, table)
		}
		_ = db.Close()
	}
	os.Exit(code)
}

// migrateTable migrates table and remembers to drop it at the end of the run.
func migrateTable(ctx context.Context, db *sql.DB, table string) error {
	s, err := New(db, &Config{Table: table})
	if err != nil {
		return err
	}
	defer func() { _ = s.Close() }()
	created = append(created, table)
	return s.Migrate(ctx)
}

func dropTable(db *sql.DB, table string) {
	ctx := context.Background()
	for _, stmt := range []string{
		"DROP PROCEDURE IF EXISTS " + quote(table+"_call_v1"),
		"DROP TABLE IF EXISTS " + quote(table),
		"DROP TABLE IF EXISTS " + quote(table+"_migrations"),
	} {
		_, _ = db.ExecContext(ctx, stmt)
	}
}

// requireServer skips tb (or fails it in CI) when the server is unusable.
func requireServer(tb testing.TB) {
	tb.Helper()
	if serverErr == nil {
		return
	}
	msg := fmt.Sprintf("MariaDB/MySQL at %s is not usable (%v); set ONCE_MYSQL_DSN", dsn(), serverErr)
	if serverenv.Required() {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// newDB returns a pool closed at the end of tb, its driver config
// optionally tuned by configure.
func newDB(tb testing.TB, configure func(*mysql.Config)) *sql.DB {
	tb.Helper()
	requireServer(tb)
	cfg, err := mysql.ParseDSN(dsn())
	if err != nil {
		tb.Fatal(err)
	}
	if configure != nil {
		configure(cfg)
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(40)
	db.SetMaxIdleConns(40)
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// newStore returns a Store on db over this run's shared table, closed at
// the end of tb.
func newStore(tb testing.TB, db *sql.DB, cfg Config) *Store {
	tb.Helper()
	cfg.Table = testTable
	s, err := New(db, &cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// newTable migrates a fresh table, for tests that count or sweep every row
// of their table.
func newTable(tb testing.TB, db *sql.DB, cfg Config) *Store {
	tb.Helper()
	table := "once_t_" + randomSuffix()
	if err := migrateTable(context.Background(), db, table); err != nil {
		tb.Fatal(err)
	}
	cfg.Table = table
	s, err := New(db, &cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// counter counts the packets the driver writes: one per command sent, so
// one per round trip (the Store sends no command that gets no reply).
type counter struct{ n atomic.Int64 }

func (c *counter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, c: c}, nil
}

// count returns how many commands fn sent.
func (c *counter) count(fn func()) int64 {
	before := c.n.Load()
	fn()
	return c.n.Load() - before
}

type countingConn struct {
	net.Conn
	c *counter
}

func (cc *countingConn) Write(b []byte) (int, error) {
	cc.c.n.Add(1)
	return cc.Conn.Write(b)
}
