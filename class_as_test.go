package once_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stagedoor/once"
)

// TestMarksBehindAnAsMethodFollowTheRule builds random error trees that
// only an As method sees into (an asOnly at the root, others and panics
// inside), and checks that Do and Resolve (which package reconcile stores
// verdicts with) classify each as the model of WithClassifier's rule does: the most cautious of the
// marks no other mark wraps, none inside a panic's value. On main a tree
// reached through As took the first mark errors.As found, so
// asOnly{errors.Join(Final(a), Hold(b))} was stored as a final answer, and
// a mark inside a panic spoke for it.
func TestMarksBehindAnAsMethodFollowTheRule(t *testing.T) {
	trees := requireMarkTreesClassified(t, func(r *rand.Rand) *markTree {
		return &markTree{kind: "as", kids: []*markTree{randomMarkTree(r, 4, true)}}
	})
	firstMarkWrong := 0
	for _, tree := range trees {
		if first, ok := tree.firstMark(); ok && first != tree.modelClass(once.ClassFinal) {
			firstMarkWrong++
		}
	}
	require.Positive(t, firstMarkWrong, "some trees' first mark (the one errors.As finds) is not their class")
}

// firstMark is the mark errors.As finds first in t's error, panics and
// all: the node's own, then its children's in order.
func (t *markTree) firstMark() (once.Class, bool) {
	if t.kind == "mark" {
		return t.mark, true
	}
	for _, k := range t.kids {
		if m, ok := k.firstMark(); ok {
			return m, true
		}
	}
	return 0, false
}
