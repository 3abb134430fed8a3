// Package backendtest is the conformance suite every once backend passes.
//
// A backend's tests call Run with a constructor; its benchmarks call
// Benchmark. The suite is laid out like river's riverdrivertest: one file
// per area of the contract (claim, complete, renew, release, resolve,
// watch, admin, held, list, ownership of returned bytes, the scopes,
// keys, owner tokens and fingerprints no call may send, and a randomized
// model-based test), each area a subtest of Run and each behaviour a
// subtest of its area, so that a failure reads as
// "Claim/TakeoverKeepsFingerprint".
//
// The suite finds the optional interfaces (Admin, Lister, Watcher) with
// backends.As, so that a decorator of a store (package localcache) runs
// every area the store it wraps supports.
//
// Every behaviour runs in parallel on a fresh random scope, so backends
// may share one table or keyspace between behaviours. Lease and retention
// cases use real, short durations: the suite never fakes time, and never
// sleeps for a fixed time either. It waits on the store's own clock,
// polling a marker record until the store itself reports that the marker's
// lease has ended, so it checks that the backend really computes time on
// the server, and it stays correct on a slow machine.
//
// The model-based test ("Model") runs random sequences of every operation
// (the held state's included, and List walks, Count and Sweep on a store
// that implements them) and of the passage of time against a reference
// model of the contract.
// It runs a fixed seed corpus by default; set -backendtest.long (or
// ONCE_MODEL_OPS=<operations per seed>, ONCE_MODEL_SEEDS=<seeds>) for a
// longer run, and ONCE_MODEL_SEED=<seed> to replay one seed.
package backendtest

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stagedoor/once/backends"
)

// Durations used by the suite. A short lease is long enough for a local
// round trip and short enough to keep the suite fast; the suite waits for
// it on the store's clock.
const (
	longLease     = time.Minute
	longRetention = time.Hour
	shortLease    = 150 * time.Millisecond
)

// NewStore returns the store under test. It is called once per behaviour;
// it may return the same shared store every time.
type NewStore func(t testing.TB) backends.Store

// areas are the parts of the contract, one file each.
var areas = []struct {
	name     string
	exercise func(t *testing.T, newStore NewStore)
}{
	{"Claim", exerciseClaim},
	{"Complete", exerciseComplete},
	{"Renew", exerciseRenew},
	{"Release", exerciseRelease},
	{"Steps", exerciseSteps},
	{"Resolve", exerciseResolve},
	{"Watch", exerciseWatch},
	{"Admin", exerciseAdmin},
	{"Held", exerciseHeld},
	{"HeldModel", exerciseHeldModel},
	{"List", exerciseList},
	{"Ownership", exerciseOwnership},
	{"Input", exerciseInput},
	{"Model", exerciseModel},
}

// Run runs the conformance suite against the stores newStore returns.
func Run(t *testing.T, newStore NewStore) {
	t.Helper()
	for _, area := range areas {
		t.Run(area.name, func(t *testing.T) {
			t.Parallel()
			area.exercise(t, newStore)
		})
	}
}

// Scope returns a fresh random scope name for one case.
func Scope(tb testing.TB) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "bt-" + hex.EncodeToString(b[:])
}

// Token returns a fresh random owner token.
func Token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
