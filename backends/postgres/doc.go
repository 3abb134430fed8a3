// Package postgres is the PostgreSQL backend of once, built on pgx/v5.
//
// A Store keeps one row per (scope, key) in a table created by Migrate (or
// by the SQL of Migrations run with your own migration tool). Every
// operation is one SQL statement, so one round trip: a first execution
// costs two (Claim, Complete), a replay, a duplicate in progress and a
// fingerprint mismatch one each (two for the first of them among claims
// of new keys, see "Replays are reads"); a takeover of a lapsed lease or of an
// expired record takes a second statement. Races with a concurrent commit
// of the same key, and a held key whose hold or reconciler lease changes
// while it is read, cost more: Claim, Resolve and LeaseHeld then run
// again, at most four times in all (see Store.Claim), and report an
// *Error, or the last record read, when every run lost. All lease and retention
// arithmetic uses the server's clock_timestamp(); the application's clock
// is never consulted. Every statement is in internal/pgsql.
//
// # Replays are reads
//
// Claim sends two plain statements, the one its Store's recent claims
// make likelier to answer first (see Store.Claim): an indexed read of the
// row, and a plain INSERT … ON CONFLICT DO NOTHING. While most claims meet
// a row it reads first, and inserts only when it saw none; while most meet
// new keys it inserts first, and reads only when the insert met a row.
// Replaying a completed record takes no row lock and writes nothing (no
// WAL), so a retry storm on one hot key runs at the speed of an indexed
// read.
//
// # HOT completions
//
// Completions, renewals and checkpoints change no indexed column (a claim
// writes the primary key only: the sweeper walks the heap, and the held
// index holds held rows only), so each is a HOT update: a new row version
// on the same page and no index entry.
//
// # Guarantees
//
// The guarantees hold on one primary with synchronous_commit on (the
// default): a claim or an outcome acknowledged to the caller is durable. A
// failover to an asynchronous replica can lose the last acknowledged
// transactions; a lost claim lets a duplicate run again, a lost outcome makes
// the key run again after its lease. Use synchronous replication when that
// matters.
//
// # Transactional mode
//
// once.DoTx with Store.BeginTx runs a call in one transaction: the claim,
// fn's writes through the pgx.Tx and the outcome commit or roll back
// together, which makes a database side effect happen exactly once.
// Store.InTx binds the store to a transaction begun elsewhere.
//
// # Setup
//
// The store has the shape of every once store: New(db, *Config), where a
// nil *Config means defaults, checks the Config without contacting the
// server; Migrate creates the schema, table and index (running it again is
// a no-op); Sweep deletes expired records, Config.SweepBatchSize per
// statement, and RunSweeper calls it on a ticker. Config's Table,
// LockTimeout, SweepBatchSize and OnSweepError mean what they mean on the
// other SQL stores; Schema is PostgreSQL's own.
//
// # Sweeping
//
// Expired records are invisible at once but stay in the table until Sweep
// (or RunSweeper, in a goroutine you start) deletes them in small batches.
package postgres
