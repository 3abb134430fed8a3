package faults

import (
	"math/rand/v2"
	"testing"
)

// killAtEveryPoint is one SIGKILL at each failpoint, each in the first few
// executions of a worker, so that it fires while the others still run.
func killAtEveryPoint() []failpoint {
	var fs []failpoint
	for _, p := range allPoints {
		fs = append(fs, failpoint{Point: p, Action: actionKill, At: 1 + rand.IntN(4)})
	}
	if currentProfile().Name == "long" {
		for _, p := range allPoints {
			fs = append(fs, failpoint{Point: p, Action: actionKill, At: 5 + rand.IntN(20)})
		}
	}
	return fs
}

func stopAt(points ...string) []failpoint {
	var fs []failpoint
	for _, p := range points {
		fs = append(fs, failpoint{Point: p, Action: actionStop, At: 1 + rand.IntN(3)})
	}
	return fs
}

// Crashes: kill -9 of a worker at every step, on both stores and in every
// effect mode. Raw mode may repeat the effect only for keys killed between
// the effect and the completion.
func TestCrashPostgresRaw(t *testing.T) {
	runScenario(t, scenario{Name: "kill -9 at every step", Backend: "postgres", Mode: modeRaw, Fails: killAtEveryPoint()})
}

func TestCrashPostgresFenced(t *testing.T) {
	runScenario(t, scenario{Name: "kill -9 at every step", Backend: "postgres", Mode: modeFenced, Fails: killAtEveryPoint(), RandomKills: 1})
}

func TestCrashPostgresTx(t *testing.T) {
	runScenario(t, scenario{Name: "kill -9 at every step", Backend: "postgres", Mode: modeTx, Fails: killAtEveryPoint(), RandomKills: 1})
}

func TestCrashRedisRaw(t *testing.T) {
	runScenario(t, scenario{Name: "kill -9 at every step", Backend: "redis", Mode: modeRaw, Fails: killAtEveryPoint()})
}

func TestCrashRedisFenced(t *testing.T) {
	runScenario(t, scenario{Name: "kill -9 at every step", Backend: "redis", Mode: modeFenced, Fails: killAtEveryPoint(), RandomKills: 1})
}

// Stale owners: a worker stopped (SIGSTOP) past its lease, resumed after
// another took the key over; it must overwrite nothing.
func TestStaleOwnerPostgresFenced(t *testing.T) {
	runScenario(t, scenario{Name: "SIGSTOP past the lease", Backend: "postgres", Mode: modeFenced, Fails: stopAt(pointBeforeEffect, pointAfterEffect)})
}

func TestStaleOwnerPostgresTx(t *testing.T) {
	runScenario(t, scenario{Name: "SIGSTOP past the lease", Backend: "postgres", Mode: modeTx, Fails: stopAt(pointAfterEffect)})
}

func TestStaleOwnerRedisFenced(t *testing.T) {
	runScenario(t, scenario{Name: "SIGSTOP past the lease", Backend: "redis", Mode: modeFenced, Fails: stopAt(pointBeforeEffect, pointCompleteBefore)})
}

// Network and store faults while the workers run.
func TestNetworkPostgresFenced(t *testing.T) {
	runScenario(t, scenario{Name: "latency, resets, pg_terminate_backend", Backend: "postgres", Mode: modeFenced, Proxy: true, Chaos: pgChaos})
}

func TestNetworkPostgresTx(t *testing.T) {
	runScenario(t, scenario{Name: "latency, resets, pg_terminate_backend", Backend: "postgres", Mode: modeTx, Proxy: true, Chaos: pgChaos})
}

func TestNetworkRedisFenced(t *testing.T) {
	runScenario(t, scenario{Name: "latency, resets, CLIENT PAUSE, restart", Backend: "redis", Mode: modeFenced, Proxy: true, Chaos: redisChaos})
}

// MariaDB (backends/mysqlstore): the same
// processes against one records table. The transactional mode does not
// apply: once.DoTx over mysqlstore commits the outcome with writes in MariaDB,
// while the suite's ledger of effects is a PostgreSQL table.
func TestCrashMySQLRaw(t *testing.T) {
	runScenario(t, scenario{Name: "kill -9 at every step", Backend: "mysql", Mode: modeRaw, Fails: killAtEveryPoint()})
}

// Each of the store's three claim orders meets faults: the default
// (INSERT IGNORE first) in the raw crash and network runs, the stored
// procedure (Config.OneRoundTripClaims) in the fenced crash run, where a
// random kill can land inside a CALL, and read-first
// (Config.ReadFirstClaims) in the stale-owner run.
func TestCrashMySQLFenced(t *testing.T) {
	runScenario(t, scenario{Name: "kill -9 at every step (one-CALL claims)", Backend: "mysql", Mode: modeFenced, Fails: killAtEveryPoint(), RandomKills: 1, ClaimOrder: "one-call"})
}

func TestStaleOwnerMySQLFenced(t *testing.T) {
	runScenario(t, scenario{Name: "SIGSTOP past the lease (read-first claims)", Backend: "mysql", Mode: modeFenced, Fails: stopAt(pointBeforeEffect, pointCompleteBefore), ClaimOrder: "read-first"})
}

func TestNetworkMySQLFenced(t *testing.T) {
	runScenario(t, scenario{Name: "latency, resets, dropped connections", Backend: "mysql", Mode: modeFenced, Proxy: true, Chaos: mysqlChaos})
}

// SQLite (backends/sqlitestore): every worker process opens the same file,
// which the store supports (writes serialised by SQLite's file lock,
// BEGIN IMMEDIATE, busy_timeout; one clock: one machine), so duplicates
// race across processes as on a server store. There is no network to cut
// and no server to stop: the network scenario and the blackhole check do
// not apply, nor does the transactional mode (the ledger is a PostgreSQL
// table).
func TestCrashSQLiteRaw(t *testing.T) {
	runScenario(t, scenario{Name: "kill -9 at every step", Backend: "sqlite", Mode: modeRaw, Fails: killAtEveryPoint()})
}

func TestCrashSQLiteFenced(t *testing.T) {
	runScenario(t, scenario{Name: "kill -9 at every step", Backend: "sqlite", Mode: modeFenced, Fails: killAtEveryPoint(), RandomKills: 1})
}

func TestStaleOwnerSQLiteFenced(t *testing.T) {
	runScenario(t, scenario{Name: "SIGSTOP past the lease", Backend: "sqlite", Mode: modeFenced, Fails: stopAt(pointBeforeEffect, pointCompleteBefore)})
}
