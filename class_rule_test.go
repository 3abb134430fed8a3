package once_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/memory"
)

// markTree describes an error tree built of marks (Final, Hold, Retry),
// %w wrappers (one or several), errors.Join, plain errors and, when asked
// for, wrappers that only an As method sees through and panics; err builds
// the error, and modelClass says what the rule of WithClassifier's doc gives
// for it, computed on the description alone.
type markTree struct {
	kind string // "leaf", "mark", "wrap", "wrapmany", "join", "as", "panic"
	mark once.Class
	kids []*markTree
}

// randomMarkTree returns a tree of at most depth levels below the root;
// with hidden, some of its nodes are As-only wrappers (asOnly) and panics.
func randomMarkTree(r *rand.Rand, depth int, hidden bool) *markTree {
	if depth == 0 || r.IntN(5) == 0 {
		return &markTree{kind: "leaf"}
	}
	kinds := 4
	if hidden {
		kinds = 6
	}
	switch r.IntN(kinds) {
	case 0:
		return &markTree{kind: "mark", mark: []once.Class{once.ClassFinal, once.ClassHold, once.ClassRetry}[r.IntN(3)], kids: []*markTree{randomMarkTree(r, depth-1, hidden)}}
	case 1:
		return &markTree{kind: "wrap", kids: []*markTree{randomMarkTree(r, depth-1, hidden)}}
	case 4:
		return &markTree{kind: "as", kids: []*markTree{randomMarkTree(r, depth-1, hidden)}}
	case 5:
		return &markTree{kind: "panic", kids: []*markTree{randomMarkTree(r, depth-1, hidden)}}
	}
	t := &markTree{kind: []string{"wrapmany", "join"}[r.IntN(2)]}
	for range 1 + r.IntN(3) {
		t.kids = append(t.kids, randomMarkTree(r, depth-1, hidden))
	}
	return t
}

func (t *markTree) err() error {
	var kids []error
	for _, k := range t.kids {
		kids = append(kids, k.err())
	}
	switch t.kind {
	case "mark":
		return map[once.Class]func(error) error{once.ClassFinal: once.Final, once.ClassHold: once.Hold, once.ClassRetry: once.Retry}[t.mark](kids[0])
	case "wrap":
		return fmt.Errorf("context: %w", kids[0])
	case "wrapmany":
		args := make([]any, len(kids))
		for i, k := range kids {
			args[i] = k
		}
		return fmt.Errorf(strings.Repeat("%w; ", len(kids)), args...)
	case "join":
		return errors.Join(kids...)
	case "as":
		return asOnly{kids[0]}
	case "panic":
		return &once.PanicError{Value: kids[0]}
	}
	return errors.New("declined")
}

func (t *markTree) String() string {
	switch t.kind {
	case "leaf":
		return "e"
	case "mark":
		return t.mark.String() + "(" + t.kids[0].String() + ")"
	}
	var kids []string
	for _, k := range t.kids {
		kids = append(kids, k.String())
	}
	return t.kind + "(" + strings.Join(kids, ", ") + ")"
}

// outermostMarks are the marks of t that no other mark wraps, a panic's
// aside (marks inside a panic's value say nothing).
func (t *markTree) outermostMarks() []once.Class {
	switch t.kind {
	case "mark":
		return []once.Class{t.mark}
	case "panic":
		return nil
	}
	var marks []once.Class
	for _, k := range t.kids {
		marks = append(marks, k.outermostMarks()...)
	}
	return marks
}

// modelClass is the class of t: the first class, in order of caution,
// among its outermost marks; unmarked when t has no mark.
func (t *markTree) modelClass(unmarked once.Class) once.Class {
	marks := t.outermostMarks()
	for _, class := range []once.Class{once.ClassHold, once.ClassRetry, once.ClassFinal} {
		for _, m := range marks {
			if m == class {
				return class
			}
		}
	}
	return unmarked
}

// TestMarksOneRuleEverywhere builds random error trees of marks and checks
// that Do and Resolve (which package reconcile stores verdicts with) both
// classify each as the model of WithClassifier's rule does: the most cautious (Hold, then Retry,
// then Final) of the marks no other mark wraps, whatever their order and
// depth. Do asks its classifier about a tree with no mark (it answers
// final here); Resolve takes such a tree as final. On main Resolve and
// the Reconciler took the first mark errors.As found, so
// errors.Join(Final(a), Hold(b)) was stored as the key's final answer
// while Do held it, and Final beat Retry in Do.
func TestMarksOneRuleEverywhere(t *testing.T) {
	requireMarkTreesClassified(t, func(r *rand.Rand) *markTree { return randomMarkTree(r, 4, false) })
}

// requireMarkTreesClassified checks, on 300 trees that draw returns, that
// Do and Resolve classify each as modelClass does
// (final when unmarked), and that the trees cover every class. It returns
// the trees.
func requireMarkTreesClassified(t *testing.T, draw func(*rand.Rand) *markTree) []*markTree {
	t.Helper()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	doScope := once.New(memory.New(nil), once.WithHoldFor(once.HoldUntilResolved),
		once.WithClassifier(func(error) once.Class { return once.ClassFinal })).Scope("do")
	seen := map[once.Class]int{}
	var trees []*markTree
	for i := range 300 {
		tree := draw(r)
		trees = append(trees, tree)
		want := tree.modelClass(once.ClassFinal)
		seen[want]++
		name := fmt.Sprintf("tree %d %s", i, tree)

		require.Equal(t, want.String(), doClass(t, doScope, fmt.Sprint(i), tree.err()).String(), "Do: %s", name)
		require.Equal(t, want.String(), resolveClass(t, tree.err()).String(), "Resolve: %s", name)
	}
	for _, class := range []once.Class{once.ClassFinal, once.ClassHold, once.ClassRetry} {
		require.Positive(t, seen[class], "the trees cover %s", class)
	}
	return trees
}

// doClass is the class Do gave err, as its second call with key shows.
func doClass(t *testing.T, scope once.Scope, key string, err error) once.Class {
	t.Helper()
	runs := 0
	fn := func(context.Context) (int, error) { runs++; return 0, err }
	_, first := once.Do(t.Context(), scope, key, nil, fn)
	require.Error(t, first)
	_, again := once.Do(t.Context(), scope, key, nil, fn)
	var inProgress *once.InProgressError
	switch {
	case runs == 2:
		return once.ClassRetry
	case errors.As(again, &inProgress) && inProgress.Held:
		return once.ClassHold
	}
	require.Equal(t, first.Error(), again.Error(), "a final error replays")
	return once.ClassFinal
}

// answerClass is the class an answer's refusal (or its absence) tells.
func answerClass(t *testing.T, err error) once.Class {
	t.Helper()
	if err == nil {
		return once.ClassFinal
	}
	var invalid *once.InvalidInputError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, "err", invalid.Field)
	reason := strings.ToLower(invalid.Reason)
	if strings.Contains(reason, "held") || strings.Contains(reason, "hold") {
		return once.ClassHold
	}
	require.Contains(t, reason, "retryable")
	return once.ClassRetry
}

// resolveClass is the class Resolve gave answer as a held key's answer.
func resolveClass(t *testing.T, answer error) once.Class {
	t.Helper()
	store := memory.New(nil)
	scope := once.New(store, once.WithHoldFor(once.HoldUntilResolved)).Scope("s")
	_, err := once.Do(t.Context(), scope, "k", nil, func(context.Context) (string, error) {
		return "", once.Hold(errors.New("provider timeout"))
	})
	require.Error(t, err)
	class := answerClass(t, once.Resolve(t.Context(), scope, "k", nil, "", answer))
	requireHeldUnless(t, store, class == once.ClassFinal)
	return class
}

// requireHeldUnless checks that key k of scope s is completed when
// resolved, and held otherwise.
func requireHeldUnless(t *testing.T, store *memory.Store, resolved bool) {
	t.Helper()
	rec, err := store.Get(t.Context(), "s", "k")
	require.NoError(t, err)
	want := backends.StateHeld
	if resolved {
		want = backends.StateCompleted
	}
	require.Equal(t, want, rec.State)
}
