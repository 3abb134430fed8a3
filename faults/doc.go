// Package faults is the fault-injection suite of once. It has no API: its
// tests run worker processes (the test binary re-executed with
// ONCE_FAULT_WORKER=1) that call once.Do over a list of keys against the
// PostgreSQL and Redis backends, kill them with SIGKILL at chosen points,
// stop them past their lease with SIGSTOP, cut and slow their connections
// through an in-process toxiproxy, restart and pause the stores, and then
// check a ledger of side effects kept in PostgreSQL against every answer
// the workers acknowledged.
//
// Invariants checked after every run (see checker_test.go):
//
//   - one effect per key when the effect is fenced (a unique key downstream)
//     or transactional (postgres.DoTx); in raw mode a second effect only for
//     keys whose worker died between the effect and the completion, each
//     one reported;
//   - no acknowledged outcome lost or changed: every acknowledged key
//     replays the acknowledged value;
//   - no key in progress past lease + slack;
//   - no fn while the store is unreachable.
//
// Run it with
//
//	ONCE_REQUIRE_SERVERS=1 go test -race -count=1 ./faults/
//	go test -count=1 ./faults/ -faults.long            # release profile
//	go test -count=1 ./faults/ -faults.write-results   # rewrite RESULTS.md
package faults
