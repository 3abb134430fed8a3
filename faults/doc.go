// Package faults is the fault-injection suite of once. It has no API: its
// tests run worker processes (the test binary re-executed with
// ONCE_FAULT_WORKER=1) that call once.Do over a list of keys against the
// PostgreSQL, Redis, MariaDB (backends/mysqlstore) and SQLite (backends/sqlitestore)
// backends, kill them with SIGKILL at chosen points,
// stop them past their lease with SIGSTOP, cut and slow their connections
// through an in-process toxiproxy, restart and pause the stores, and then
// check a ledger of side effects kept in PostgreSQL against every answer
// the workers acknowledged.
//
// Invariants checked after every run (see checker_test.go):
//
//   - one effect per key when the effect is fenced (a unique key downstream)
//     or transactional (once.DoTx); in raw mode a second effect only for
//     keys whose worker died between the effect and the completion, each
//     one reported;
//   - no acknowledged outcome lost or changed: every acknowledged key
//     replays the acknowledged value;
//   - no key in progress past lease + slack;
//   - no fn while the store is unreachable.
//
// Which scenarios run on which store: kill -9 at every step (raw and
// fenced effects) and SIGSTOP past the lease run on all four, with every
// worker process on the same records (SQLite: the same file, which
// sqlitestore supports across processes of one machine; on MariaDB each of
// the store's three claim orders meets faults: see scenarios_test.go). The
// network
// scenario (latency, resets, dropped connections through the proxy) runs on
// PostgreSQL, Redis and MariaDB; SQLite has no network, and no server to
// blackhole or restart. The transactional mode (once.DoTx) runs on
// PostgreSQL only: the ledger of effects is a PostgreSQL table, so a
// MariaDB or SQLite transaction cannot hold both the effect and the
// outcome. The blackhole check runs on PostgreSQL, Redis
// and MariaDB, the cancellation storm on every store.
//
// TestHeldKeys runs held owners (fn's provider call answers the first
// call for a key with a lost reply, so fn returns a held error and every
// key is held once) and reconciler processes settling the keys from the
// provider's ledger, on PostgreSQL (a server of the suite's own, killed
// and restarted during the reconcilers' passes), Redis (its own server,
// restarted likewise), MariaDB (connections reset and blackholed) and
// SQLite. Owners are killed and stopped past their lease between Hold and
// Do's return; reconcilers are killed mid-pass (a key leased, before and
// after the verdict's Resolve, at a random time) and stopped past their
// lease before the Resolve. Besides the invariants above, checked on
// verdicts as on Do's answers: a verdict is stored at most once per key,
// and never once a later claim of the key ran fn (the verdict would be on
// another intent, or over its completion); no key is held or in progress
// past hold + lease + slack on the store's clock. Its memory subtest
// is the form on the memory store: goroutines, a stalled Hold and Resolve,
// passes cut off by their context.
//
// TestSteps runs an intent of three steps (once.Step, once.StepTx,
// once.StepAtMostOnce): a charge and a shipment through the fenced provider
// under derived keys, or, for about half the keys, an at-most-once
// notification in place of the shipment, then the order row, written by
// StepTx in the records' database on PostgreSQL, MariaDB and SQLite (a
// Step through the provider on Redis). Workers are killed with SIGKILL at
// every step boundary (before the first step, after each step's effect
// and before its checkpoint, after its checkpoint, inside StepTx's
// transaction before its commit, around Complete), and each key's intent
// is resumed by a fresh worker. Checked per key: a step's effect made
// once per derived key and called at most once more per kill between its
// effect and its checkpoint (both counts reported); the order row written
// exactly once; the at-most-once step called at most once, a kill inside
// it leaving the key held with code once_step_interrupted; every key
// completed or so held, answered the same on replay; none stuck. The
// memory store does not survive a process and is left out. Its size is
// -faults.steps-keys and -faults.steps-kills (per boundary).
//
// TestPostgresFailover starts a PostgreSQL primary and a streaming standby
// of its own (initdb and pg_basebackup, on free loopback ports; as the
// postgres OS user when run as root), kills the primary with SIGKILL under
// load, promotes the standby and lets the clients reconnect to it, with
// asynchronous replication and with a synchronous standby
// (synchronous_commit on, and remote_apply). It counts acknowledged
// outcomes lost, keys whose fn ran twice and keys stuck; with a synchronous
// standby any loss fails it. Its figures are a section of RESULTS.md.
//
// Run it with
//
//	ONCE_REQUIRE_SERVERS=1 go test -race -count=1 ./faults/
//	go test -count=1 ./faults/ -faults.long            # release profile
//	go test -count=1 ./faults/ -faults.write-results   # rewrite RESULTS.md
//	go test -race -count=1 -run TestPostgresFailover -v ./faults/
//	go test -race -count=1 -run TestHeldKeys -v ./faults/
//	go test -race -count=1 -run TestSteps -v ./faults/ -faults.steps-keys=400 -faults.steps-kills=3
package faults
