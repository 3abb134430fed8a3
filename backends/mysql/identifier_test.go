package mysqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/backendtest"
)

// MySQL's routine names ignore case on every lower_case_table_names
// setting, its table names do not at 0 (Linux's default): the tables
// "once_x" and "ONCE_X" were two tables whose <table>_call_v2 was one
// procedure, so the second Migrate pointed it at its own table, and the
// first table's Store then claimed in one CALL (OneRoundTripClaims, InTx,
// DoTx) and resolved in the other table. New now refuses a table name with
// an upper-case letter, so no two names the Store accepts share a
// procedure.
func TestNewRefusesUpperCaseTableNames(t *testing.T) {
	for _, table := range []string{"ONCE_RECORDS", "Once_records", "once_Records", "oncE", "X", "a_1B"} {
		_, err := New(nil, &Config{Table: table})
		var ie *IdentifierError
		if !errors.As(err, &ie) || ie.Field != "Table" || ie.Name != table || !strings.Contains(ie.Reason, "upper-case") {
			t.Fatalf("New with table %q: %v, want an *IdentifierError about upper case", table, err)
		}
	}
	for _, table := range []string{"once_records", "orders", "a_1b", "_x9"} {
		if _, err := New(nil, &Config{Table: table}); err != nil {
			t.Fatalf("New with table %q: %v", table, err)
		}
	}
}

// storeOfEarlierVersion returns a Store over table as the versions before
// the upper-case check built it, bypassing New's check of the name.
func storeOfEarlierVersion(t *testing.T, db *sql.DB, table string) *Store {
	t.Helper()
	s, err := New(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.cfg.table = table
	s.sql = newStatements(table, s.cfg.lockWaitS)
	return s
}

// The README's remedy for a table an earlier version created with
// capitals, at lower_case_table_names=0: rename the table and its versions
// table, delete version 3, and let the lower-case name's Migrate re-create
// the procedures. The records survive, and every path (the plain claim,
// the CALL, Resolve, List along the index, Count) then works on the
// renamed table.
func TestRenamingATableCreatedWithCapitals(t *testing.T) {
	db := newDB(t, nil)
	ctx := context.Background()
	var lctn int
	if err := db.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lctn); err != nil {
		t.Fatal(err)
	}
	if lctn != 0 {
		t.Skip("the remedy is for lower_case_table_names=0; at 1 and 2 the lower-case name is the same table")
	}
	lower := "once_caps_" + randomSuffix()
	upper := "Once_Caps_" + strings.TrimPrefix(lower, "once_caps_")
	created = append(created, upper, lower)

	old := storeOfEarlierVersion(t, db, upper)
	defer func() { _ = old.Close() }()
	if err := old.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	scope := backendtest.Scope(t)
	done := claimParams(scope, "done")
	if r, err := old.Claim(ctx, done); err != nil || !r.Claimed {
		t.Fatalf("claim on the old table: %+v %v", r, err)
	}
	if ok, err := old.Complete(ctx, backends.CompleteParams{Scope: scope, Key: "done", Owner: done.Owner, Outcome: []byte("v"), Retention: time.Hour}); err != nil || !ok {
		t.Fatalf("complete on the old table: %v %v", ok, err)
	}
	_ = old.Close()

	if _, err := New(db, &Config{Table: upper}); err == nil {
		t.Fatalf("New accepted %q", upper)
	}
	for _, stmt := range []string{
		"RENAME TABLE " + quote(upper) + " TO " + quote(lower) + ", " + quote(upper+"_migrations") + " TO " + quote(lower+"_migrations"),
		"DELETE FROM " + quote(lower+"_migrations") + " WHERE version IN (3, 4, 5)",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for name, cfg := range map[string]Config{"plain": {}, "oneRoundTrip": {OneRoundTripClaims: true}} {
		cfg.Table = lower
		s, err := New(db, &cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("%s: migrate: %v", name, err)
		}
		r, err := s.Claim(ctx, claimParams(scope, "done"))
		if err != nil || r.Claimed || string(r.Existing.Outcome) != "v" {
			t.Fatalf("%s: replay of the record written before the rename: %+v %v", name, r, err)
		}
		if r, err := s.Claim(ctx, claimParams(scope, "new-"+name)); err != nil || !r.Claimed {
			t.Fatalf("%s: claim: %+v %v", name, r, err)
		}
		rs, err := s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "resolved-" + name, Owner: backendtest.Token(), Outcome: []byte("r"), Retention: time.Hour})
		if err != nil || !rs.Resolved {
			t.Fatalf("%s: resolve: %+v %v", name, rs, err)
		}
		// A refusing Resolve calls <table>_call_v3 (migration 004), which
		// must now point at the renamed table too.
		rs, err = s.Resolve(ctx, backends.ResolveParams{Scope: scope, Key: "refusing-" + name, Owner: backendtest.Token(), Outcome: []byte("r"), Retention: time.Hour, RefuseLiveClaim: true})
		if err != nil || !rs.Resolved {
			t.Fatalf("%s: refusing resolve: %+v %v", name, rs, err)
		}
	}
	s, err := New(db, &Config{Table: lower})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	page, err := s.List(ctx, backends.ListParams{Scope: scope})
	if err != nil || len(page.Records) != 2 {
		t.Fatalf("list: %+v %v, want the two pending claims", page, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+quote(lower)+" WHERE scope = ?", scope).Scan(&n); err != nil || n != 7 {
		t.Fatalf("the renamed table holds %d rows of the scope (%v), want 7", n, err)
	}
}
