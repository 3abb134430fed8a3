package once

import "errors"

// Class says what the core does with an error returned by fn.
type Class uint8

const (
	// ClassRetry errors are never stored. The claim is released at once,
	// so the next call with the key runs fn again. This is the class of
	// every unclassified error, of context cancellation and of panics. It
	// is safe when fn did nothing durable, or when its downstream call
	// carries a DerivedKey that the downstream service deduplicates.
	ClassRetry Class = iota
	// ClassFinal errors are the answer to the intent (a card decline). They
	// are stored and replayed to every retry of the key.
	ClassFinal
	// ClassHold errors leave the outcome unknown (a timeout after the
	// request left). They are not stored; the key is held for the hold
	// period (WithHoldFor), so duplicates get ErrInProgress (Held) meanwhile.
	// Resolve or a Reconciler stores the real outcome when it is learnt.
	ClassHold
)

// String returns "retryable", "final" or "held".
func (c Class) String() string {
	switch c {
	case ClassFinal:
		return "final"
	case ClassHold:
		return "held"
	default:
		return "retryable"
	}
}

type classified struct {
	err   error
	class Class
}

func (c *classified) Error() string { return c.err.Error() }
func (c *classified) Unwrap() error { return c.err }

// Final marks err as the final answer to the intent: Do stores it and
// replays it to every retry of the key. Do returns err itself, unwrapped.
// Final(nil) is nil. Joined beside a Hold or Retry mark
// (errors.Join(Final(a), Hold(b))), the other mark wins (see WithClassifier).
func Final(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ClassFinal}
}

// Hold marks err as an unknown outcome: Do holds the key for the hold
// period (WithHoldFor; the store keeps a held record), so duplicates get
// an *InProgressError with Held set, and stores nothing.
// Do returns err itself, unwrapped. Hold(nil) is nil. Joined beside a
// Final or Retry mark (errors.Join(Final(a), Hold(b))), the Hold mark
// wins (see WithClassifier for an error that carries several marks).
func Hold(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ClassHold}
}

// Retry marks err as retryable whatever the classifier says: Do releases
// the claim at once and stores nothing, so the next call runs fn again. Do
// returns err itself, unwrapped. Retry(nil) is nil. Joined beside a Final
// mark (errors.Join(Final(a), Retry(b))), the Retry mark wins; beside a
// Hold mark, the Hold mark does (see WithClassifier).
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ClassRetry}
}

// classify returns the class of err and err without its class marker (a
// marker on err itself; one deeper in err's tree stays). The class is that
// of err's marks, as WithClassifier's doc states; for an error with no mark it
// is c's answer (retryable when c is nil). It is the one place that
// decides what marks mean: Do (package consume's too), Resolve and a
// Reconciler's verdict all classify with it.
func classify(err error, c func(error) Class) (Class, error) {
	if m, ok := err.(*classified); ok {
		return m.class, m.err
	}
	if class, found := markedClass(err); found {
		return class, err
	}
	if c != nil {
		return c(err), err
	}
	return ClassRetry, err
}

// markedClass is the class of the outermost marks in err's tree (the
// marks no other mark wraps), the most cautious of them (see caution).
// For a node that is not a mark and whose Unwrap finds none, the outermost
// marks its As method reaches count, under the same rule (none inside a
// panic). found is false when the tree has no mark.
func markedClass(err error) (class Class, found bool) {
	switch e := err.(type) {
	case nil:
		return ClassRetry, false
	case *classified:
		return e.class, true
	case *PanicError:
		// A panic's value is not an answer fn returned: marks inside it
		// say nothing, and the caller's policy for panics decides.
		return ClassRetry, false
	case interface{ Unwrap() error }:
		class, found = markedClass(e.Unwrap())
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if c, ok := markedClass(inner); ok && (!found || caution(c) > caution(class)) {
				class, found = c, true
			}
		}
	}
	if found {
		return class, true
	}
	a, ok := err.(interface{ As(any) bool })
	if !ok {
		return ClassRetry, false
	}
	// Only As reaches the tree behind an As method. A
	// markWalk target gathers its marks and panics in the order errors.As
	// meets them: a node, then all that it wraps, then its next sibling.
	// So the nodes a gathered one wraps come right after it, as many as a
	// walk of its own unwrapped error gathers; skipping them leaves the
	// outermost.
	w := &markWalk{}
	a.As(&w)
	for i := 0; i < len(w.nodes); i++ {
		n := w.nodes[i]
		i += len(walkMarks(errors.Unwrap(n)))
		if m, ok := n.(*classified); ok && (!found || caution(m.class) > caution(class)) {
			class, found = m.class, true
		}
	}
	return class, found
}

// markWalk is the target markedClass gives an As method: each mark and
// each panic that errors.As meets joins nodes (see meetMark), and none
// matches, so the walk goes on through the whole tree.
type markWalk struct{ nodes []error }

func (*markWalk) Error() string { return "once: mark walk" }

// meetMark is the As method of marks and panics: node joins target when
// target is a markWalk, and matches nothing.
func meetMark(target any, node error) bool {
	if w, ok := target.(**markWalk); ok {
		(*w).nodes = append((*w).nodes, node)
	}
	return false
}

// walkMarks is what a markWalk gathers in err's tree.
func walkMarks(err error) []error {
	w := &markWalk{}
	if err != nil {
		errors.As(err, &w)
	}
	return w.nodes
}

// As matches no target. It lets markedClass find the mark through an As
// method of an error that wraps it.
func (m *classified) As(target any) bool { return meetMark(target, m) }

// caution ranks classes for markedClass: a held outcome is neither stored
// nor run again; a retryable one stores nothing and runs again; a final
// one is stored as the intent's answer for the retention.
func caution(c Class) int {
	switch c {
	case ClassHold:
		return 2
	case ClassRetry:
		return 1
	default:
		return 0
	}
}
