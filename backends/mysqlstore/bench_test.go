package mysqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stagedoor/once/backends/backendtest"
)

// BenchmarkRawBaseline is the seed's mechanism written minimally against
// database/sql, without the library, so that the library's cost is the
// ratio of BenchmarkStore to it (run both with -cpu 1,16). It has its own
// minimal table (the key, an owner, a state, the outcome, an expiry) and
// its own statements, prepared like the Store's: a first execution is an
// INSERT IGNORE of the claim, then an UPDATE fenced by the owner storing
// the outcome; a replay is the same INSERT IGNORE (which finds the key),
// then a SELECT of the outcome. It checks no lease, no fingerprint and no
// expiry on the way: it is the floor, not a competitor.
func BenchmarkRawBaseline(b *testing.B) {
	db := newDB(b, nil)
	ctx := context.Background()
	table := quote("once_baseline_" + randomSuffix())
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+` (
	scope      VARBINARY(255) NOT NULL,
	`+"`key`"+`      VARBINARY(255) NOT NULL,
	owner      VARBINARY(255) NOT NULL,
	state      TINYINT        NOT NULL,
	outcome    LONGBLOB       NULL,
	expires_at DATETIME(6)    NOT NULL,
	PRIMARY KEY (scope, `+"`key`"+`)
) ENGINE=InnoDB`); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _, _ = db.Exec("DROP TABLE IF EXISTS " + table) })
	prepare := func(query string) *sql.Stmt {
		st, err := db.PrepareContext(ctx, query)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = st.Close() })
		return st
	}
	insert := prepare("INSERT IGNORE INTO " + table + " (scope, `key`, owner, state, expires_at) VALUES (?, ?, ?, 1, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR)")
	update := prepare("UPDATE " + table + " SET state = 2, outcome = ? WHERE scope = ? AND `key` = ? AND owner = ?")
	selectOutcome := prepare("SELECT outcome FROM " + table + " WHERE scope = ? AND `key` = ?")
	outcome := []byte(`{"order_id":"9b1e4d3a","status":"paid","amount":4200}`)

	first := func(b *testing.B, scope string, n *atomic.Int64) {
		key := "k" + strconv.FormatInt(n.Add(1), 10)
		owner := backendtest.Token()
		res, err := insert.ExecContext(ctx, scope, key, owner)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			b.Fatalf("claim: %d rows", n)
		}
		res, err = update.ExecContext(ctx, outcome, scope, key, owner)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			b.Fatalf("complete: %d rows", n)
		}
	}
	replay := func(b *testing.B, scope string) {
		res, err := insert.ExecContext(ctx, scope, "hot", "replayer")
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n != 0 {
			b.Fatalf("replay claimed: %d rows", n)
		}
		var got []byte
		if err := selectOutcome.QueryRowContext(ctx, scope, "hot").Scan(&got); err != nil || len(got) == 0 {
			b.Fatalf("replay: %v", err)
		}
	}
	seed := func(b *testing.B, scope string) {
		if _, err := insert.ExecContext(ctx, scope, "hot", "seed"); err != nil {
			b.Fatal(err)
		}
		if _, err := update.ExecContext(ctx, outcome, scope, "hot", "seed"); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("FirstExecution", func(b *testing.B) {
		scope := backendtest.Scope(b)
		var n atomic.Int64
		b.ReportAllocs()
		for b.Loop() {
			first(b, scope, &n)
		}
	})
	b.Run("FirstExecutionParallel", func(b *testing.B) {
		scope := backendtest.Scope(b)
		var n atomic.Int64
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				first(b, scope, &n)
			}
		})
	})
	b.Run("Replay", func(b *testing.B) {
		scope := backendtest.Scope(b)
		seed(b, scope)
		b.ReportAllocs()
		for b.Loop() {
			replay(b, scope)
		}
	})
	b.Run("ReplayParallel", func(b *testing.B) {
		scope := backendtest.Scope(b)
		seed(b, scope)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				replay(b, scope)
			}
		})
	})
}
