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
// Final(nil) is nil. See Classifier for an error that carries several
// marks.
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
// wins (see Classifier).
func Hold(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ClassHold}
}

// Retry marks err as retryable whatever the classifier says: Do releases
// the claim at once and stores nothing, so the next call runs fn again. Do
// returns err itself, unwrapped. Retry(nil) is nil. See Classifier for an
// error that carries several marks.
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ClassRetry}
}

// Classifier decides the class of an error that fn returned without
// marking it with Final, Hold or Retry.
//
// An error may carry several marks, wrapped (fmt.Errorf's %w) or joined
// (errors.Join) anywhere in its tree. A mark speaks for the error it
// wraps, marks inside included: Retry(Hold(err)) is retryable, since the
// code that added the outer mark had the last word. Among the outermost
// marks (those no other mark wraps, as in errors.Join(Final(a), Hold(b))),
// the most cautious wins, whatever their order: Hold over Final over
// Retry. An outcome that is partly unknown is unknown: storing a final
// answer for it (which no reconciler would revisit) or releasing the claim
// (which runs fn again) could hide or repeat an effect that may have
// happened. A final answer beside a retryable error is stored rather than
// run again. The classifier is asked only about an error with no mark.
type Classifier func(err error) Class

// classify returns the class of err and err without its class marker (a
// marker on err itself; one deeper in err's tree stays). It calls c only
// for an error with no marker.
func classify(err error, c Classifier) (Class, error) {
	if m, ok := err.(*classified); ok {
		return m.class, m.err
	}
	if class, found := markedClass(err); found {
		return class, err
	}
	// An error whose As method reaches a marker that no Unwrap shows.
	var m *classified
	if errors.As(err, &m) {
		return m.class, err
	}
	if c != nil {
		return c(err), err
	}
	return ClassRetry, err
}

// markedClass is the class of the outermost markers in err's tree (the
// markers no other marker wraps), the most cautious of them: Hold, then
// Final, then Retry. found is false when the tree has no marker that
// Unwrap reaches.
func markedClass(err error) (class Class, found bool) {
	switch e := err.(type) {
	case nil:
		return ClassRetry, false
	case *classified:
		return e.class, true
	case interface{ Unwrap() error }:
		return markedClass(e.Unwrap())
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if c, ok := markedClass(inner); ok && (!found || caution(c) > caution(class)) {
				class, found = c, true
			}
		}
		return class, found
	default:
		return ClassRetry, false
	}
}

// caution ranks classes for markedClass: a held outcome is never stored
// nor run again, a final one is stored, a retryable one runs again.
func caution(c Class) int {
	switch c {
	case ClassHold:
		return 2
	case ClassFinal:
		return 1
	default:
		return 0
	}
}
