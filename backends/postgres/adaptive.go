package postgres

import "sync/atomic"

// claimMix chooses, for each Claim outside a transaction, between the
// one-statement claim (claim.sql: an indexed read, then the insert only
// for an absent key) and the insert-first claim (insert_claim.sql, then
// read_claim.sql only when the key had a row), from the answers of the
// Store's recent claims.
//
// score rises by mixFound with each claim that met a row (a replay, an
// in-progress duplicate, a mismatch, a takeover) and falls by one with
// each claim that inserted a new key, within [0, mixMax]. The Store sends
// the insert-first form while score is 0: while nearly every key is new
// (fewer than about one claim in mixFound+1 meets a row), a first
// execution costs the server one plain insert, and the rare claim that
// meets a row takes a second statement; as soon as claims meet rows more
// often, score rises and every claim, a replay included, is one statement
// again. A retry storm on a key therefore runs on the one-statement claim
// after its first replay.
//
// score starts at mixStart (the one-statement claim), so that a new Store
// sends the insert first only after it has seen mixStart new keys in a
// row. It is read on every claim and written only when it changes (not
// while it sits at 0 and keys are new), so that concurrent first
// executions do not contend on it.
type claimMix struct{ score atomic.Int32 }

const (
	mixFound = 8  // the rise of score with a claim that met a row
	mixMax   = 64 // score's ceiling: at most mixMax new keys to switch back
	mixStart = 8  // score of a new Store
)

func newClaimMix() *claimMix {
	m := &claimMix{}
	m.score.Store(mixStart)
	return m
}

// insertFirst reports whether the next claim sends the insert first.
func (m *claimMix) insertFirst() bool { return m.score.Load() == 0 }

// inserted records a claim that inserted a new key.
func (m *claimMix) inserted() {
	for {
		s := m.score.Load()
		if s == 0 || m.score.CompareAndSwap(s, s-1) {
			return
		}
	}
}

// found records a claim that met a row.
func (m *claimMix) found() {
	for {
		s := m.score.Load()
		if s == mixMax || m.score.CompareAndSwap(s, min(s+mixFound, mixMax)) {
			return
		}
	}
}

// record records the answer of a claim's first statement.
func (m *claimMix) record(r fastRow) {
	if r.found && r.state == 0 {
		m.inserted()
	} else {
		m.found()
	}
}
