// Package mysqlstore is the MariaDB and MySQL backend of once, over
// database/sql with github.com/go-sql-driver/mysql (InnoDB tables).
//
// A Store keeps one row per (scope, key) in a table created by
// Store.Migrate (or by the SQL of Migrations run with your own migration
// tool), together with the stored procedure <table>_call_v1, which Claim
// (in one CALL) and Resolve call.
//
// # Round trips and server cost
//
// MySQL has no INSERT … RETURNING, and MariaDB's cannot be combined with ON
// DUPLICATE KEY UPDATE, so no single statement both claims a key and
// returns the record that prevented the claim; INSERT … ON DUPLICATE KEY
// UPDATE would also take an exclusive row lock on every replay. A claim is
// then two statements or one CALL, and the Store offers three orders:
//
//   - Insert first (the default). Claim sends an INSERT IGNORE, which alone
//     claims a new key: a first execution is two round trips (claim,
//     Complete). When the key exists, a lock-free prepared SELECT follows
//     and answers a replay, a duplicate in progress and a mismatch (two
//     round trips, no write; the INSERT holds a shared lock on the row for
//     its duration).
//   - Read first (Config.ReadFirstClaims). The SELECT comes first and alone
//     answers a replay, a duplicate in progress and a mismatch: one round
//     trip, no row lock, no write. A new key costs the INSERT IGNORE more,
//     so a first execution is three round trips.
//   - One CALL (Config.OneRoundTripClaims). The same read and write run
//     inside the stored procedure <Table>_call_v1: every answer is one round
//     trip, a first execution two. The price is server CPU: a CALL costs
//     MariaDB several times a prepared SELECT, so on a busy server the
//     procedure is slower, and much slower under concurrency (see the
//     module's README for the measured figures).
//
// In the plain orders an expired record or a lapsed lease costs an UPDATE
// conditioned on the row version read. In every order a takeover and a
// re-sent claim return the record's checkpoints (ClaimResult.Steps) in
// that same read, at no round trip more; a replay and a duplicate in
// progress neither read nor return them.
//
// Complete, Renew, Checkpoint and Release are single statements, except a
// Release that deletes nothing (the record has checkpoints, which it
// keeps with its lease ended, or is not the caller's): a second statement,
// an UPDATE, follows. Resolve is one CALL;
// Hold and LeaseHeld are one fenced UPDATE each. A claim, Resolve or
// LeaseHeld that races with a concurrent session on the same key runs
// again a bounded number of times (four attempts, five for a deadlocked
// CALL: see Store.Claim and Store.LeaseHeld) and then returns an *Error,
// or for LeaseHeld the record last read. List (backends.Lister)
// reads pending or held rows along the index on (state, expires_at),
// never the completed rows (see the README's "Held keys and listing").
// Every statement that may wait for a row lock waits at most
// Config.LockTimeout, whatever the session's innodb_lock_wait_timeout.
// Statements are prepared once per connection and cached by the Store, so
// each call is one COM_STMT_EXECUTE whatever the DSN's interpolateParams
// setting.
//
// # Time
//
// Every lease and retention is computed on the server's UTC_TIMESTAMP(6),
// never on the application's clock, and stored as DATETIME(6) in UTC, so the
// session time zone does not matter. Durations are sent in whole
// microseconds, a positive sub-microsecond duration rounding up to one. The
// longest time.Duration (about 292 years) fits in DATETIME: today it lands
// around 2318, and a deadline could pass 9999-12-31 23:59:59.999999,
// DATETIME's maximum, only after about the year 9700 (in strict mode the
// write would then fail with error 1441, datetime field overflow; it does
// not saturate). The session must run with autocommit on, an unpinned
// timestamp and an isolation level above READ UNCOMMITTED (see New).
//
// # Guarantees and what can be lost
//
// An acknowledged claim or outcome is durable on the server with InnoDB's
// defaults (innodb_flush_log_at_trx_commit=1; with sync_binlog=1 when the
// binary log is on). Asynchronous replication can lose the last acknowledged
// transactions on a failover: a lost claim lets a duplicate run again, a lost
// outcome makes the key run again after its lease. Semi-synchronous
// replication (or Galera) narrows that window. Read replicas must not serve
// Claim: a lagging replica would answer "absent" for a claimed key.
//
// # Transactional mode
//
// once.DoTx with Store.BeginTx runs a call in one READ COMMITTED
// transaction: the claim, fn's writes through the Tx and the outcome
// commit or roll back together, which makes a database side effect happen
// exactly once. Store.InTx binds the store to a transaction begun
// elsewhere.
//
// # Setup
//
// The store has the shape of every once store: New(db, *Config), where a
// nil *Config means defaults, checks the Config without contacting the
// server; Migrate creates the table, index and procedure (running it again
// is a no-op); Sweep deletes expired records, Config.SweepBatchSize per
// statement, and RunSweeper calls it on a ticker. Config's Table,
// LockTimeout, SweepBatchSize and OnSweepError mean what they mean on the
// other SQL stores.
//
// # Sweeping
//
// Expired records are invisible at once but stay in the table until Sweep
// (or RunSweeper, in a goroutine you start) deletes them in small batches.
package mysqlstore
