package once_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// crashable is a store whose writes stop arriving once the process is
// "dead": a crash leaves the record as the last write that landed left it.
type crashable struct {
	backends.Store
	dead atomic.Bool
}

var errDead = errors.New("the process died")

func (s *crashable) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	if s.dead.Load() {
		return false, errDead
	}
	return s.Store.Checkpoint(ctx, p)
}

func (s *crashable) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	if s.dead.Load() {
		return false, errDead
	}
	return s.Store.Complete(ctx, p)
}

func (s *crashable) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	if s.dead.Load() {
		return false, errDead
	}
	return s.Store.Release(ctx, p)
}

func (s *crashable) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	if s.dead.Load() {
		return false, errDead
	}
	return s.Store.Hold(ctx, p)
}

// A fault of one execution, at one step.
type stepFault int

const (
	noFault         stepFault = iota
	retryAt                   // the step's function fails retryably, having done nothing
	crashBefore               // the process dies before the step starts
	crashAfterActed           // the process dies after the step acted, before its checkpoint
)

// TestStepModel runs intents of three steps (some at most once) through
// random executions, each with a random fault — a retryable error, or a
// crash before a step or after it acted — and checks every step's effects
// and the intent's end against a model: a step acts again only after a
// crash between its effect and its checkpoint; an at-most-once step never
// acts twice, and one interrupted holds the key; a completed intent
// answers the same to every replay.
func TestStepModel(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runStepModel(t, seed)
		})
	}
}

func runStepModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 29))
	clock := newFakeClock()
	store := &crashable{Store: memory.New(&memory.Config{Now: clock.Now})}
	scope := once.New(store, once.WithLease(time.Minute), once.WithHoldFor(once.HoldUntilResolved)).Scope("model")
	names := []string{"a", "b", "c"}
	atMostOnce := map[string]bool{}
	for _, n := range names {
		atMostOnce[n] = rng.IntN(4) == 0
	}
	// The model.
	done, started := map[string]bool{}, map[string]bool{}
	wantActs, acts := map[string]int{}, map[string]int{}
	retryable := errors.New("retryable")

	for attempt := range 12 {
		fault, at := stepFault(rng.IntN(4)), names[rng.IntN(len(names))]
		if rng.IntN(3) == 0 {
			fault = noFault
		}
		// What the model expects of this execution.
		wantEnd := "completed"
		for _, n := range names {
			if n == at && fault == crashBefore {
				wantEnd = "crashed"
				break
			}
			if done[n] {
				continue
			}
			if started[n] {
				wantEnd = "held"
				break
			}
			if n == at && fault == retryAt {
				wantEnd = "released"
				break
			}
			wantActs[n]++
			if atMostOnce[n] {
				started[n] = true
			}
			if n == at && fault == crashAfterActed {
				wantEnd = "crashed"
				break
			}
			done[n] = true
		}

		out, err := once.DoOutcome(t.Context(), scope, "intent", nil, func(ctx context.Context) (string, error) {
			var answer []string
			for _, n := range names {
				if n == at && fault == crashBefore {
					store.dead.Store(true)
					return "", errDead
				}
				step := once.Step[string]
				if atMostOnce[n] {
					step = once.StepAtMostOnce[string]
				}
				v, err := step(ctx, n, func(context.Context) (string, error) {
					if n == at && fault == retryAt {
						return "", retryable
					}
					acts[n]++
					if n == at && fault == crashAfterActed {
						store.dead.Store(true)
					}
					return n + "!", nil
				})
				if err != nil {
					return "", err
				}
				answer = append(answer, v)
			}
			return strings.Join(answer, ","), nil
		})
		msg := fmt.Sprintf("attempt %d, fault %d at %s, at most once %v", attempt, fault, at, atMostOnce)
		switch wantEnd {
		case "completed":
			require.NoError(t, err, msg)
			require.Equal(t, "a!,b!,c!", out.Value, msg)
		case "released":
			require.ErrorIs(t, err, retryable, msg)
			require.Equal(t, once.Released, out.Status, msg)
		case "crashed":
			require.Error(t, err, msg)
			store.dead.Store(false)
			clock.Advance(2 * time.Minute) // the dead owner's lease ends
		case "held":
			require.ErrorIs(t, err, once.ErrStepInterrupted, msg)
			require.Equal(t, once.Held, out.Status, msg)
		}
		require.Equal(t, wantActs, acts, msg)
		for _, n := range names {
			if atMostOnce[n] {
				require.LessOrEqual(t, acts[n], 1, "%s: an at-most-once step acted twice", msg)
			}
		}
		if wantEnd == "completed" || wantEnd == "held" {
			return // a replay answers the same; a held key waits for Resolve
		}
	}
}
