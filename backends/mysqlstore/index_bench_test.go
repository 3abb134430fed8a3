package mysqlstore

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stagedoor/once/backends/backendtest"
)

// BenchmarkHotPathIndex measures what the schema's index choice costs the
// hot path: a first execution (the Store's INSERT IGNORE of a claim, then
// its Complete UPDATE) on a table with an index on expires_at instead of
// the schema's, on the schema's table (index on (state, expires_at)), and
// on the schema's table plus an index on held_at, the alternative the
// schema rejects (NULL except on held rows, but still one entry per row in
// InnoDB). It runs three rounds of the three sub-benchmarks in that order
// (A B C A B C …; names repeat with #01, #02), so they interleave; compare
// medians. A first execution is two commits (two fsyncs): the fsync
// dominates each operation, and the index's cost shows in the bulk runs
// recorded in the README rather than here, on a loaded machine.
func BenchmarkHotPathIndex(b *testing.B) {
	db := newDB(b, nil)
	ctx := context.Background()
	schema := func(table string, ddl ...string) statements {
		b.Helper()
		if err := migrateTable(ctx, db, table); err != nil {
			b.Fatal(err)
		}
		for _, stmt := range ddl {
			if _, err := db.ExecContext(ctx, strings.ReplaceAll(stmt, "{t}", table)); err != nil {
				b.Fatal(err)
			}
		}
		return newStatements(table, 5)
	}
	cases := []struct {
		name string
		sql  statements
	}{
		{"expires_at", schema("once_ix1_"+randomSuffix(), "ALTER TABLE `{t}` DROP INDEX `{t}_state_idx`, ADD INDEX `{t}_expires_at_idx` (expires_at)")},
		{"state_expires_at", schema("once_ix2_" + randomSuffix())},
		{"state_expires_at+held_at", schema("once_ix3_"+randomSuffix(), "CREATE INDEX `{t}_held_at_idx` ON `{t}` (held_at)")},
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
