package mysqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stagedoor/once/backends/backendtest"
)

// BenchmarkHotPathIndex measures what migration 002's index choice costs
// the hot path: a first execution (the Store's INSERT IGNORE of a claim,
// then its Complete UPDATE) on a table at schema 001 (index on
// expires_at), at schema 002 (index on (state, expires_at) instead), and
// at schema 002 plus an index on held_at, the alternative 002 rejects
// (NULL except on held rows, but still one entry per row in InnoDB).
// It runs three rounds of the three sub-benchmarks in that order (A B C
// A B C …; names repeat with #01, #02), so they interleave; compare
// medians. A first execution is two commits (two fsyncs): the fsync
// dominates each operation, and the index's cost shows in the bulk runs
// recorded in the README rather than here, on a loaded machine.
func BenchmarkHotPathIndex(b *testing.B) {
	db := newDB(b, nil)
	ctx := context.Background()
	all, err := loadMigrations("x")
	if err != nil {
		b.Fatal(err)
	}
	schema := func(table string, versions int, extra string) statements {
		b.Helper()
		ms, err := loadMigrations(table)
		if err != nil {
			b.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = conn.Close() }()
		created = append(created, table)
		if err := migrateConn(ctx, conn, table, ms[:versions]); err != nil {
			b.Fatal(err)
		}
		if extra != "" {
			if _, err := conn.ExecContext(ctx, "CREATE INDEX "+quote(table+"_held_at_idx")+" ON "+quote(table)+" ("+extra+")"); err != nil {
				b.Fatal(err)
			}
		}
		return newStatements(table, 5)
	}
	cases := []struct {
		name string
		sql  statements
	}{
		{"001-expires_at", schema("once_ix1_"+randomSuffix(), 1, "")},
		{"002-state_expires_at", schema("once_ix2_"+randomSuffix(), len(all), "")},
		{"002+held_at", schema("once_ix3_"+randomSuffix(), len(all), "held_at")},
	}
	outcome := []byte(`{"order_id":"9b1e4d3a","status":"paid","amount":4200}`)
	type prepared struct{ insert, complete *sql.Stmt }
	stmts := make([]prepared, len(cases))
	for i, c := range cases {
		insert, err := db.PrepareContext(ctx, c.sql.insertClaim)
		if err != nil {
			b.Fatal(err)
		}
		complete, err := db.PrepareContext(ctx, c.sql.complete)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = insert.Close(); _ = complete.Close() })
		stmts[i] = prepared{insert, complete}
	}
	for range 3 {
		for i, c := range cases {
			st := stmts[i]
			b.Run(c.name, func(b *testing.B) {
				scope := backendtest.Scope(b)
				var n atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						key := "k" + strconv.FormatInt(n.Add(1), 10)
						owner := backendtest.Token()
						mustOne(b, st.insert, scope, key, []byte("fp"), owner, int64(60e6), int64(60e6), int64(3600e6))
						mustOne(b, st.complete, int64(3600e6), outcome, scope, key, owner)
					}
				})
			})
		}
	}
}

func mustOne(b *testing.B, st *sql.Stmt, args ...any) {
	res, err := st.Exec(args...)
	if err != nil {
		b.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		b.Fatalf("%d rows", n)
	}
}
