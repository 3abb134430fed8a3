// Package sqlitestore is a durable, embedded once backend: a SQLite file,
// through the pure-Go driver modernc.org/sqlite (no cgo).
//
// It is meant for one process that must survive its own restarts — a
// single-instance service, a CLI, a desktop or edge agent — where the
// in-memory store would forget every key on a restart and let a retry that
// spans the restart charge twice. A file path (a plain file name, not a
// SQLite URI, and not ":memory:": see New) is all it needs:
//
//	store, err := sqlitestore.New("/var/lib/myapp/once.db", nil)
//	...
//	defer store.Close()
//	err = store.Migrate(ctx)
//	...
//	go store.RunSweeper(ctx, time.Minute)
//	k := once.New(store)
//
// # Setup
//
// The store has the shape of every once store: New(path, *Config), where
// a nil *Config means defaults, builds it without touching the file;
// Migrate creates the file and its table (running it again is a no-op);
// Sweep deletes expired records, Config.SweepBatchSize per statement, and
// RunSweeper calls it on a ticker. Config's Table, LockTimeout,
// SweepBatchSize, OnSweepError and Now mean what they mean on the other
// stores.
//
// # Guarantees and what can be lost
//
// Every claim and outcome is committed to the file before the call
// returns. The database runs in WAL mode with synchronous=FULL by default,
// so an acknowledged write survives a crash of the process (kill -9) and of
// the machine (power loss); with Config.Synchronous "NORMAL" it survives
// the process's crash but the last transactions may be lost with the
// machine's. The file must be on a local disk: SQLite's locking is not
// reliable on network file systems.
//
// One process only. Writes are serialised through one connection, and a
// second process opening the same file stays correct (each write runs in
// a BEGIN IMMEDIATE transaction, and busy_timeout makes it wait), but
// Watch only sees the writes of its own Store, and all processes must
// share one clock. Several service instances need a server store
// (PostgreSQL, MariaDB/MySQL, Redis).
//
// # Clock
//
// SQLite has no server, so the process's clock is the store's clock: leases
// and retention are computed on Config.Now (time.Now by default) and stored
// as Unix microseconds. That is the wall clock, not a monotonic one — it has
// to survive restarts. A wall clock stepped back lengthens live leases and
// retention by the step; stepped forward, it ends them early (a duplicate
// may then take over a claim whose owner is still running, and fencing
// stops the stale owner's writes). Keep the clock synchronised (NTP slews
// rather than steps).
//
// Durations are stored in whole microseconds, a positive sub-microsecond
// one rounding up to one; deadlines saturate at the largest int64
// microsecond (year 294247), which no time.Duration reaches from today.
//
// # Round trips
//
// There are none: every operation is a few statements on a local file. A
// replay, a duplicate in progress and a fingerprint mismatch are one
// SELECT on a read connection, which takes no write lock and writes
// nothing, and never reads the record's checkpoints; a claim that writes
// re-reads the row inside its BEGIN IMMEDIATE transaction before it
// decides. Checkpoint is one UPDATE; Release one DELETE, followed by an
// UPDATE when it deleted nothing (the record has checkpoints, which it
// keeps with its lease ended, or is not the caller's).
package sqlitestore
