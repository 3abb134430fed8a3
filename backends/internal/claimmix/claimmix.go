// Package claimmix chooses a store's claim form from the answers of its
// recent claims: the create-first form (try to create the record alone,
// and read it in a second step only when the key had one) while nearly
// every key is new, the one-step form (read and create together)
// otherwise. PostgreSQL and Redis share it.
package claimmix

import "sync/atomic"

// Mix is the choice of one Store, safe for concurrent use. The zero value
// is not usable; call New.
//
// score rises by Rise with each claim that met a record (a replay, an
// in-progress duplicate, a mismatch, a takeover) and falls by one with
// each claim that created a new key, within [0, Max]. The Store creates
// first while score is 0: while nearly every key is new (fewer than about
// one claim in Rise+1 meets a record), a first execution costs the server
// the plain create alone, and the rare claim that meets a record takes a
// second step; as soon as claims meet records more often, score rises and
// every claim, a replay included, is one step again. A retry storm on a
// key therefore runs on the one-step claim after its first replay.
//
// score starts at Start (the one-step claim), so that a new Store creates
// first only after it has seen Start new keys in a row. It is read on
// every claim and written only when it changes (not while it sits at 0
// and keys are new), so that concurrent first executions do not contend
// on it.
type Mix struct{ score atomic.Int32 }

const (
	Rise  = 8  // the rise of score with a claim that met a record
	Max   = 64 // score's ceiling: at most Max new keys to switch back
	Start = 8  // score of a new Mix
)

// New returns a Mix that starts on the one-step claim.
func New() *Mix {
	m := &Mix{}
	m.score.Store(Start)
	return m
}

// CreateFirst reports whether the next claim tries the create alone first.
func (m *Mix) CreateFirst() bool { return m.score.Load() == 0 }

// Created records a claim that created a new key.
func (m *Mix) Created() {
	for {
		s := m.score.Load()
		if s == 0 || m.score.CompareAndSwap(s, s-1) {
			return
		}
	}
}

// Found records a claim that met a record.
func (m *Mix) Found() {
	for {
		s := m.score.Load()
		if s == Max || m.score.CompareAndSwap(s, min(s+Rise, Max)) {
			return
		}
	}
}
