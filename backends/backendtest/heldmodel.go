package backendtest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once/backends"
)

// The randomized test of the held state's fencing: random sequences of
// Claim, Hold, LeaseHeld, Resolve and Complete by a few owners on one key
// (long leases and holds, so that time plays no part), against a model of
// the contract written on backends.Store.Hold and LeaseHeld.

// heldModel is one key as the contract says it is.
type heldModel struct {
	state   backends.State // 0: absent
	owner   string
	leased  bool // held: a reconciler's lease is live
	outcome string
	// completed reports a record completed by its claim's owner (Complete),
	// not by a Resolve.
	completed bool
}

type heldOp struct {
	kind    string // claim, hold, lease, resolve, complete
	owner   int
	outcome string
}

func (o heldOp) String() string { return fmt.Sprintf("%s(%d,%s)", o.kind, o.owner, o.outcome) }

// apply returns what the contract answers (applied, and the state an
// unapplied write reports) and the key afterwards.
func (m heldModel) apply(o heldOp, owner string) (bool, backends.State, heldModel) {
	switch o.kind {
	case "claim":
		switch {
		case m.state == 0:
			return true, 0, heldModel{state: backends.StatePending, owner: owner}
		case m.state == backends.StatePending && m.owner == owner:
			return true, 0, m
		}
	case "hold":
		switch {
		case m.state == backends.StatePending && m.owner == owner:
			return true, 0, heldModel{state: backends.StateHeld, owner: owner}
		case m.state == backends.StateHeld && m.owner == owner:
			return true, 0, m
		}
		return false, m.state, m
	case "lease":
		if m.state == backends.StateHeld && (!m.leased || m.owner == owner) {
			return true, 0, heldModel{state: backends.StateHeld, owner: owner, leased: true}
		}
	case "resolve":
		switch m.state {
		case 0:
			return true, 0, heldModel{state: backends.StateCompleted, owner: owner, outcome: o.outcome}
		case backends.StatePending:
			// A live claim (leases are long here) is left to its owner.
		case backends.StateHeld:
			if !m.leased || m.owner == owner {
				return true, 0, heldModel{state: backends.StateCompleted, owner: owner, outcome: o.outcome}
			}
		case backends.StateCompleted:
			if m.owner == owner && m.outcome == o.outcome {
				return true, 0, m
			}
		}
	case "complete":
		switch {
		case m.state == backends.StatePending && m.owner == owner:
			return true, 0, heldModel{state: backends.StateCompleted, owner: owner, outcome: o.outcome, completed: true}
		case m.state == backends.StateCompleted && m.owner == owner && m.outcome == o.outcome:
			return true, 0, m
		}
		return false, m.state, m
	}
	return false, m.state, m
}

// do runs o on the store and returns what it answered.
func (e *env) doHeld(key string, o heldOp, owner string) (bool, backends.State) {
	e.t.Helper()
	switch o.kind {
	case "claim":
		r := e.claim(key, owner, nil, longLease, longRetention)
		return r.Claimed, r.Existing.State
	case "hold":
		return e.hold(key, owner, longLease, longRetention), 0
	case "lease":
		r := e.leaseHeld(key, owner, longLease)
		return r.Leased, r.Existing.State
	case "resolve":
		r := e.resolveAs(key, owner, nil, []byte(o.outcome))
		return r.Resolved, r.Existing.State
	default:
		return e.complete(key, owner, []byte(o.outcome), longRetention), 0
	}
}

func exerciseHeldModel(t *testing.T, newStore NewStore) {
	run(t, newStore, "Fencing", func(e *env) {
		kinds := []string{"claim", "hold", "lease", "resolve", "complete"}
		for seed := range uint64(24) {
			r := rand.New(rand.NewPCG(seed, 15))
			owners := []string{Token(), Token(), Token()}
			key := fmt.Sprintf("k-%d", seed)
			var m heldModel
			var trace []string
			for range 40 {
				o := heldOp{kind: kinds[r.IntN(len(kinds))], owner: r.IntN(len(owners)), outcome: []string{"x", "y"}[r.IntN(2)]}
				trace = append(trace, o.String())
				wantOK, wantState, next := m.apply(o, owners[o.owner])
				gotOK, gotState := e.doHeld(key, o, owners[o.owner])
				if o.kind == "resolve" && m.completed && m.owner == owners[o.owner] && m.outcome == o.outcome {
					// A Resolve with the token and outcome a Complete stored:
					// the contract's re-send rule is about Resolves; a store
					// may tell a Complete from a Resolve (SQLite does).
					m = next
					continue
				}
				require.Equal(e.t, wantOK, gotOK, "seed %d: %s", seed, strings.Join(trace, " "))
				if !wantOK && (o.kind == "claim" || o.kind == "lease" || o.kind == "resolve") {
					require.Equal(e.t, wantState, gotState, "seed %d: the record reported: %s", seed, strings.Join(trace, " "))
				}
				m = next
			}
		}
	})
}
