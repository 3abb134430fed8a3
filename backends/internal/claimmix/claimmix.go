// Package claimmix chooses a store's claim form from the answers of its
// recent claims: the create-first form (try to create the record alone,
// and read it in a second step only when the key had one) while new keys
// are frequent enough, the other form otherwise. PostgreSQL and Redis
// share it, each with its own Rule.
package claimmix

import "sync/atomic"

// Mix is the choice of one Store, safe for concurrent use. The zero value
// is not usable; call New.
//
// score rises by the Rule's Rise with each claim that met a record (a
// replay, an in-progress duplicate, a mismatch, a takeover) and falls by
// one with each claim that created a new key, within [0, Max]. The Store
// creates first while score is below the Rule's Below. With Rise r, score
// drifts down while fewer than about one claim in r+1 meets a record, and
// up otherwise.
//
// score is read on every claim and written only when it changes (not
// while it sits at 0 and keys are new, nor at Max while claims meet
// records), so that concurrent claims of a steady workload do not contend
// on it.
type Mix struct {
	score atomic.Int32
	rule  Rule
}

// Rule is how a Mix weighs its claims' answers.
type Rule struct {
	Rise  int32 // the rise of score with a claim that met a record
	Below int32 // the Store creates first while score < Below
	Start int32 // score of a new Mix
}

// Max is score's ceiling: a Mix at Max creates first again after at most
// Max-Below+1 new keys in a row (Max with Biased, Max/2+1 with Even).
const Max = 64

// Rise and Start are Biased's.
const (
	Rise  = 8
	Start = 8
)

var (
	// Biased creates first only while nearly every key is new (fewer than
	// about one claim in Rise+1 meets a record, after Start new keys in a
	// row), and switches back to the other form from the claim after one
	// that met a record: for a store whose other form answers every claim
	// in one step (Redis's pipeline), so that a retry storm on a key runs
	// on it after its first replay.
	Biased = Rule{Rise: Rise, Below: 1, Start: Start}
	// Even creates first while fewer than about half the recent claims met
	// a record, and reads first otherwise: for a store whose two forms
	// both take two steps when they guess wrong (PostgreSQL's insert and
	// read), where a claim costs 1 + min(p, 1-p) steps expected, p the
	// share of claims that meet a record. A new Mix reads first until a
	// claim creates a new key.
	Even = Rule{Rise: 1, Below: Max / 2, Start: Max / 2}
)

// New returns a Mix that weighs answers by r.
func New(r Rule) *Mix {
	m := &Mix{rule: r}
	m.score.Store(r.Start)
	return m
}

// CreateFirst reports whether the next claim tries the create alone first.
func (m *Mix) CreateFirst() bool { return m.score.Load() < m.rule.Below }

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
		next := min(s+m.rule.Rise, Max)
		if s == next || m.score.CompareAndSwap(s, next) {
			return
		}
	}
}
