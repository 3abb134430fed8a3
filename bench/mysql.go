package main

import (
	"context"
	"database/sql"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"

	mysqlstore "github.com/stagedoor/once/backends/mysqlstore"
)

// mysqlDSN is ONCE_MYSQL_DSN, or the local MariaDB (root, no password,
// database test).
func mysqlDSN() string {
	if d := os.Getenv("ONCE_MYSQL_DSN"); d != "" {
		return d
	}
	return "root@tcp(127.0.0.1:3306)/test"
}

func quoteMySQL(name string) string { return "`" + name + "`" }

// setupMySQL returns the library over mysqlstore (with the claim order
// claims, see options) and the raw baseline (see rawMySQLTarget), each in
// its own table of this run, on one *sql.DB of conns connections.
func setupMySQL(ctx context.Context, id string, conns int, claims string) (_ *suite, err error) {
	cfg, err := mysql.ParseDSN(mysqlDSN())
	if err != nil {
		return nil, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	libTable, rawTable := "once_bench_"+id, "once_bench_seed_"+id
	var store *mysqlstore.Store
	var stmts []*sql.Stmt
	cleanup := func() {
		for _, st := range stmts {
			_ = st.Close()
		}
		if store != nil {
			_ = store.Close()
		}
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, q := range []string{
			"DROP PROCEDURE IF EXISTS " + quoteMySQL(libTable+"_call_v1"),
			"DROP TABLE IF EXISTS " + quoteMySQL(libTable),
			"DROP TABLE IF EXISTS " + quoteMySQL(libTable+"_migrations"),
			"DROP TABLE IF EXISTS " + quoteMySQL(rawTable),
		} {
			_, _ = db.ExecContext(cctx, q)
		}
		_ = db.Close()
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	storeCfg := &mysqlstore.Config{Table: libTable, ReadFirstClaims: claims == "read-first", OneRoundTripClaims: claims == "one-call"}
	if store, err = mysqlstore.New(db, storeCfg); err != nil {
		return nil, err
	}
	if err := store.Migrate(ctx); err != nil {
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
	raw, err := rawMySQLTarget(ctx, db, quoteMySQL(rawTable), "raw-"+id, &stmts)
	if err != nil {
		return nil, err
	}
	return &suite{lib: lib, cached: cached, raw: raw, notes: mysqlNotes(claims), cleanup: cleanup}, nil
}

// rawMySQLTarget is the seed's mechanism written minimally against
// database/sql and go-sql-driver/mysql, in its own table of the seed's six
// columns (InnoDB, primary key (user_id, key)) with statements prepared
// once, as the Store prepares its own: a first execution is an INSERT
// IGNORE of the claim, then an UPDATE of the response; every other path is
// the same INSERT IGNORE, which affects no row, then a SELECT of the row,
// whose hash and status decide replay, in progress or mismatch. No lease,
// owner, fencing, expiry or sweeper index; two round trips on every path.
// (backends/mysqlstore's BenchmarkRawBaseline is the same mechanism.)
func rawMySQLTarget(ctx context.Context, db *sql.DB, table, user string, stmts *[]*sql.Stmt) (*target, error) {
	if _, err := db.ExecContext(ctx, "CREATE TABLE "+table+` (
	`+"`key`"+`         VARBINARY(255) NOT NULL,
	user_id         VARBINARY(255) NOT NULL,
	request_hash    VARBINARY(64)  NOT NULL,
	response_status INT            NULL,
	response_body   LONGBLOB       NULL,
	created_at      DATETIME(6)    NOT NULL,
	PRIMARY KEY (user_id, `+"`key`"+`)
) ENGINE=InnoDB`); err != nil {
		return nil, err
	}
	prepare := func(q string) (*sql.Stmt, error) {
		st, err := db.PrepareContext(ctx, q)
		if err == nil {
			*stmts = append(*stmts, st)
		}
		return st, err
	}
	insertSt, err := prepare("INSERT IGNORE INTO " + table + " (`key`, user_id, request_hash, created_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))")
	if err != nil {
		return nil, err
	}
	completeSt, err := prepare("UPDATE " + table + " SET response_status = ?, response_body = ? WHERE user_id = ? AND `key` = ?")
	if err != nil {
		return nil, err
	}
	fetchSt, err := prepare("SELECT request_hash, response_status, response_body FROM " + table + " WHERE user_id = ? AND `key` = ?")
	if err != nil {
		return nil, err
	}
	return seedTarget(ctx, seedStatements{
		Insert: func(ctx context.Context, key string, hash []byte) (bool, error) {
			res, err := insertSt.ExecContext(ctx, key, user, hash)
			if err != nil {
				return false, err
			}
			n, err := res.RowsAffected()
			return n == 1, err
		},
		Complete: func(ctx context.Context, key string, body []byte) error {
			return oneRow(completeSt.ExecContext(ctx, 200, body, user, key))
		},
		Fetch: func(ctx context.Context, key string) ([]byte, []byte, bool, error) {
			var h, body []byte
			var status sql.NullInt32
			err := fetchSt.QueryRowContext(ctx, user, key).Scan(&h, &status, &body)
			return h, body, status.Valid, err
		},
	})
}

// mysqlNotes says what the library's round-trip column counts on MariaDB,
// for the claim order measured.
func mysqlNotes(claims string) func(context.Context) (string, error) {
	var how string
	switch claims {
	case "insert-first":
		how = "With the Store's default claim (INSERT IGNORE first) a first execution sends 2 statements in 2 calls; " +
			"a replay, an in progress and a mismatch send 2 in 1 call (the INSERT IGNORE, then a lock-free SELECT), as the baseline does."
	case "read-first":
		how = "With read-first claims (Config.ReadFirstClaims) a first execution sends 3 statements in 2 calls " +
			"(a lock-free SELECT, INSERT IGNORE, Complete); a replay, an in progress and a mismatch send 1 (the SELECT)."
	case "one-call":
		how = "With one-CALL claims (Config.OneRoundTripClaims) every Claim is one CALL of the stored procedure: " +
			"a first execution sends 2 statements, every other path 1."
	}
	return func(context.Context) (string, error) {
		return "MariaDB: the library's round trips/op count Store calls. " + how + " The raw baseline sends 2 on every path.\n", nil
	}
}
