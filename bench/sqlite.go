package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // the baseline's driver, the one sqlitestore uses

	sqlitestore "github.com/stagedoor/once/backends/sqlitestore"
)

// setupSQLite returns the library over sqlitestore (its defaults: WAL,
// synchronous FULL, one writer and four readers) and the raw baseline (see
// rawSQLiteTarget), each on its own file in a temporary directory removed
// by cleanup.
func setupSQLite(ctx context.Context, id string) (_ *suite, err error) {
	dir, err := os.MkdirTemp("", "once-bench-"+id+"-")
	if err != nil {
		return nil, err
	}
	var store *sqlitestore.Store
	var raw *sql.DB
	cleanup := func() {
		if store != nil {
			_ = store.Close()
		}
		if raw != nil {
			_ = raw.Close()
		}
		_ = os.RemoveAll(dir)
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	if store, err = sqlitestore.New(filepath.Join(dir, "library.db"), nil); err != nil {
		return nil, err
	}
	if err = store.Migrate(ctx); err != nil {
		_ = store.Close()
		return nil, err
	}
	lib, err := libraryTarget(ctx, store, "lib-"+id, nil)
	if err != nil {
		return nil, err
	}
	cached, err := cachedLibraryTarget(ctx, store, id)
	if err != nil {
		return nil, err
	}
	// The baseline's file, with the Store's durability settings (WAL,
	// synchronous FULL) and one connection: every path of the seed's
	// mechanism starts with a write, and SQLite runs one writer at a time.
	raw, err = sql.Open("sqlite", "file:"+filepath.Join(dir, "raw.db")+
		"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		return nil, err
	}
	raw.SetMaxOpenConns(1)
	raw.SetMaxIdleConns(1)
	rt, err := rawSQLiteTarget(ctx, raw, "raw-"+id)
	if err != nil {
		return nil, err
	}
	return &suite{lib: lib, cached: cached, raw: rt, notes: sqliteNotes, cleanup: cleanup}, nil
}

// rawSQLiteTarget is the seed's mechanism written minimally against
// database/sql and modernc.org/sqlite, in its own file and table of the
// seed's six columns (primary key (user_id, key)): a first execution is
// INSERT … ON CONFLICT DO NOTHING RETURNING, then UPDATE of the response;
// every other path is the same insert, which returns nothing, then a
// SELECT of the row, whose hash and status decide replay, in progress or
// mismatch. Each statement is its own autocommit transaction. No lease,
// owner, fencing, expiry or sweeper index.
func rawSQLiteTarget(ctx context.Context, db *sql.DB, user string) (*target, error) {
	if _, err := db.ExecContext(ctx, `CREATE TABLE seed_keys (
	key             TEXT    NOT NULL,
	user_id         TEXT    NOT NULL,
	request_hash    BLOB    NOT NULL,
	response_status INTEGER,
	response_body   BLOB,
	created_at      INTEGER NOT NULL,
	PRIMARY KEY (user_id, key)
)`); err != nil {
		return nil, err
	}
	const (
		insertSQL = `INSERT INTO seed_keys (key, user_id, request_hash, created_at)
VALUES (?, ?, ?, unixepoch('subsec') * 1000000) ON CONFLICT (user_id, key) DO NOTHING RETURNING key`
		completeSQL = `UPDATE seed_keys SET response_status = ?, response_body = ? WHERE user_id = ? AND key = ?`
		fetchSQL    = `SELECT request_hash, response_status, response_body FROM seed_keys WHERE user_id = ? AND key = ?`
	)
	return seedTarget(ctx, seedStatements{
		Insert: func(ctx context.Context, key string, hash []byte) (bool, error) {
			var k string
			err := db.QueryRowContext(ctx, insertSQL, key, user, hash).Scan(&k)
			if err == sql.ErrNoRows {
				return false, nil
			}
			return err == nil, err
		},
		Complete: func(ctx context.Context, key string, body []byte) error {
			return oneRow(db.ExecContext(ctx, completeSQL, 200, body, user, key))
		},
		Fetch: func(ctx context.Context, key string) ([]byte, []byte, bool, error) {
			var h, body []byte
			var status sql.NullInt32
			err := db.QueryRowContext(ctx, fetchSQL, user, key).Scan(&h, &status, &body)
			return h, body, status.Valid, err
		},
	})
}

// sqliteNotes says what the round-trip column means on SQLite.
func sqliteNotes(context.Context) (string, error) {
	return "SQLite: no network; the round trips/op columns count Store calls (library) and statements " +
		"(baseline), each a transaction on the local file (WAL, synchronous FULL, so every commit is an fsync). " +
		"The baseline's replay is an INSERT (a write transaction) then a SELECT; the library's is one SELECT on a read connection.\n", nil
}
