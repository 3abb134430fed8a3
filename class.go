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
// Final(nil) is nil.
func Final(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ClassFinal}
}

// Hold marks err as an unknown outcome: Do holds the key for the hold
// period (WithHoldFor; the store keeps a held record), so duplicates get
// an *InProgressError with Held set, and stores nothing.
// Do returns err itself, unwrapped. Hold(nil) is nil.
func Hold(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ClassHold}
}

// Retry marks err as retryable whatever the classifier says: Do releases
// the claim at once and stores nothing, so the next call runs fn again. Do
// returns err itself, unwrapped. Retry(nil) is nil.
func Retry(err error) error {
	if err == nil {
		return nil
	}
	return &classified{err: err, class: ClassRetry}
}

// Classifier decides the class of an error that fn returned without
// marking it with Final, Hold or Retry.
type Classifier func(err error) Class

// classify returns the class of err and err without its class marker.
func classify(err error, c Classifier) (Class, error) {
	var m *classified
	if errors.As(err, &m) {
		if m == err {
			return m.class, m.err
		}
		return m.class, err
	}
	if c != nil {
		return c(err), err
	}
	return ClassRetry, err
}
