package consume

import (
	"errors"

	"github.com/stagedoor/once"
)

// ErrRejected marks a message the handler rejected with Reject.
var ErrRejected = errors.New("once/consume: message rejected")

type rejected struct{ err error }

func (e *rejected) Error() string        { return e.err.Error() }
func (e *rejected) Unwrap() error        { return e.err }
func (e *rejected) Is(target error) bool { return target == ErrRejected }

// Reject marks err as the reason a message can never be processed (its
// payload cannot be decoded, it names something that does not exist): the
// decision is DeadLetter with ReasonRejected, whatever other marks err
// carries. Nothing is stored and the claim is released, so a corrected
// copy of the message with the same key is processed normally. Reject(nil)
// is nil.
func Reject(err error) error {
	if err == nil {
		return nil
	}
	return &rejected{err: err}
}

// rejectable marks a rejected message's error once.Retry, the outermost
// mark, which speaks for the marks inside it: the core releases the
// claim.
func rejectable(err error) error {
	if errors.Is(err, ErrRejected) {
		return once.Retry(err)
	}
	return err
}
