package reconcile

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// Report counts what one Pass did.
type Report struct {
	// Examined is the held keys the pass listed.
	Examined int
	// Resolved is the keys this pass resolved.
	Resolved int
	// LeftHeld is the keys whose verdict was not settled, or that could
	// not be resolved (Failed of them): their Check returned an
	// error or panicked, or the verdict did not encode (the codec failed
	// or panicked, or the value or final error's methods panicked, or the
	// outcome is too large, or a settled verdict's Err is held or
	// retryable by its marks: see Verdict), or the verdict came after the
	// Check's deadline (ErrLateVerdict).
	LeftHeld, Failed int
	// Busy is the keys another Job had leased, or that were
	// settled by someone else meanwhile, or that the verdict could not be
	// stored for because they are no longer the held record this
	// Job leased: its lease lapsed and another took the key over,
	// or the key expired, was deleted, or is held for another intent.
	Busy int
	// Skipped is the keys this pass left alone, without a store call,
	// because a store write for them (LeaseHeld, Resolve, or the LeaseHeld
	// that ends a lease) failed, or the store panicked, recently in this
	// Job: a key is skipped for a second after such a failure,
	// twice as long after each further consecutive one, at most a minute,
	// and is forgotten once a store write for it succeeds (or to make
	// room: a Job remembers the failures of at most 256 keys, 1024
	// counting those whose lease may still be its own). A store error that comes with the end of
	// Pass's context starts no backoff, but the key's lease's owner is
	// still remembered when that lease may be ours (see Pass). A key in
	// backoff is free for other Jobs: its lease was ended (unless
	// that failed too, or the store panicked; see Pass).
	Skipped int
	// Panicked is the keys for which user code the Job ran
	// panicked: the Check, the encoding of the verdict (see
	// Failed) or an observer. Each panic is recovered and reported in
	// Errors as a *PanicError. A key whose Check or
	// encoding panicked is left held (and counted in Failed); an observer
	// panics after the store write its event reports, so the key is
	// counted by what was done (Resolved, LeftHeld) and that event is
	// dropped.
	Panicked int
	// Errors holds the first few errors of keys, each prefixed with its
	// scope and key: the Check's errors, encoding failures,
	// recovered panics, and the failure (a *StoreError) to end a key's
	// lease after the store error that Pass returns, or before the
	// Job forgets it (to make room, as Skipped says).
	Errors []error
	// Done reports that the pass reached the end of the held keys (also
	// when a store error on the last of them ended it); the next Pass
	// starts over.
	Done bool
}

// maxReportedErrors bounds Report.Errors.
const maxReportedErrors = 8

// keyReport reports what happened to one key in its pass's report.
type keyReport struct {
	rep      *Report
	l        backends.Listed
	panicked bool
}

// fail reports err, a failure of the key, counting the key once in
// Panicked when err is a panic this Job recovered (panicked). It
// runs none of err's methods but Error, which fmt recovers: err may be
// the Check's or the codec's, user code that runs outside the
// recovery of ask and encodeVerdict.
func (kr *keyReport) fail(err error, panicked bool) {
	if panicked && !kr.panicked {
		kr.panicked = true
		kr.rep.Panicked++
	}
	if len(kr.rep.Errors) < maxReportedErrors {
		kr.rep.Errors = append(kr.rep.Errors, fmt.Errorf("%s/%s: %w", kr.l.Scope, kr.l.Key, err))
	}
}

// emit reports e to cfg's observers, after the store write it reports. A
// panic in one is recovered and reported; the event is dropped.
func (kr *keyReport) emit(ctx context.Context, k *once.Keeper, e once.Event) {
	defer func() {
		if p := recover(); p != nil {
			kr.fail(newPanic("observer", p), true)
		}
	}()
	k.Emit(ctx, e)
}

// PanicError reports a panic, recovered by a Job, in the
// user code it ran for a key (see Report.Panicked): the value it
// panicked with and the stack at the panic.
type PanicError struct {
	// Hook is what panicked: "check" (the Check), "encode" (the
	// codec, or the settled value's or final error's methods, while the
	// verdict was encoded) or "observer".
	Hook  string
	Value any
	Stack []byte
}

func newPanic(hook string, p any) *PanicError {
	return &PanicError{Hook: hook, Value: p, Stack: debug.Stack()}
}

func (e *PanicError) Error() string {
	what := e.Hook
	switch e.Hook {
	case "check":
		what = "the Check"
	case "encode":
		what = "encoding the verdict"
	}
	return fmt.Sprintf("reconcile: %s panicked: %v", what, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
