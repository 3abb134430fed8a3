package oncehttp

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/stagedoor/once"
)

// defaultProblems are the documents WriteError uses outside a guarded
// request.
var defaultProblems = sync.OnceValue(func() *problems {
	p := newProblems(DefaultProblemBase, ProblemTypes{})
	return &p
})

// WriteError answers r with the RFC 9457 Problem Details that fits err, an
// error from a once.Do (or DoOutcome, Resolve) the handler made itself, for
// example for its call to a payment provider under a once.DerivedKey, and
// reports whether it wrote anything. It writes nothing and returns false
// for a nil error or one that is not the library's (fn's own errors, which
// the handler answers as it sees fit):
//
//	*once.InProgressError      409 request-in-progress, Retry-After: the
//	                           core's hint (at most 1 s); for a held key
//	                           409 request-outcome-unknown, Retry-After:
//	                           the hold left
//	once.ErrKeyReused          422 idempotency-key-reused
//	*once.InvalidInputError    400 invalid-input
//	*once.StoreError, ErrLeaseLost, ErrOutcomeUnrecorded, a cancelled
//	or expired context         503 store-unavailable, Retry-After: 1
//	*once.OutcomeTooLargeError, ErrUndecodable
//	                           500 internal-error
//
// Answers below 500 are marked SkipStore, so a retry of the request runs
// the handler again and the nested call answers afresh; 5xx answers follow
// Config.OnServerError, as every 5xx. In a guarded request the problem
// types are the middleware's (Config.ProblemBase, Config.ProblemTypes);
// elsewhere the defaults. No error text is sent.
func WriteError(w http.ResponseWriter, r *http.Request, err error) bool {
	if err == nil {
		return false
	}
	p := defaultProblems()
	if g := guardedFrom(r.Context()); g != nil && g.problems != nil {
		p = g.problems
	}
	var inProgress *once.InProgressError
	kind, retryAfter := problemKind(0), 0
	switch {
	case errors.As(err, &inProgress):
		kind, retryAfter = inProgressProblem(inProgress)
	case errors.Is(err, once.ErrKeyReused):
		kind = probKeyReused
	case errors.As(err, new(*once.InvalidInputError)):
		kind = probInvalidInput
	case errors.As(err, new(*once.StoreError)), errors.Is(err, once.ErrLeaseLost),
		errors.Is(err, once.ErrOutcomeUnrecorded),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		kind, retryAfter = probStoreUnavailable, 1
	case errors.As(err, new(*once.OutcomeTooLargeError)), errors.Is(err, once.ErrUndecodable):
		kind = probInternal
	default:
		return false
	}
	if problemSpecs[kind].status < 500 {
		SkipStore(r.Context())
	}
	p.write(w, kind, retryAfter)
	return true
}
