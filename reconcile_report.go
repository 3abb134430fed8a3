package once

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/stagedoor/once/backends"
)

// ReconcileReport counts what one Pass did.
type ReconcileReport struct {
	// Examined is the held keys the pass listed.
	Examined int
	// Resolved is the keys this pass resolved.
	Resolved int
	// LeftHeld is the keys whose verdict was not settled, or that could
	// not be resolved (Failed of them): their ReconcileFunc returned an
	// error or panicked, or the verdict did not encode (the codec failed
	// or panicked, or the value or final error's methods panicked, or the
	// outcome is too large, or a settled verdict's Err is held or
	// retryable by its marks: see Verdict), or the verdict came after the
	// ReconcileFunc's deadline (ErrLateVerdict).
	LeftHeld, Failed int
	// Busy is the keys another Reconciler had leased, or that were
	// settled by someone else meanwhile, or that the verdict could not be
	// stored for because they are no longer the held record this
	// Reconciler leased: its lease lapsed and another took the key over,
	// or the key expired, was deleted, or is held for another intent.
	Busy int
	// Skipped is the keys this pass left alone, without a store call,
	// because a store write for them (LeaseHeld, Resolve, or the LeaseHeld
	// that ends a lease) failed, or the store panicked, recently in this
	// Reconciler: a key is skipped for a second after such a failure,
	// twice as long after each further consecutive one, at most a minute,
	// and is forgotten once a store write for it succeeds (or to make
	// room: a Reconciler remembers the failures of at most 256 keys, 1024
	// counting those whose lease may still be its own). A store error that comes with the end of
	// Pass's context starts no backoff, but the key's lease's owner is
	// still remembered when that lease may be ours (see Pass). A key in
	// backoff is free for other Reconcilers: its lease was ended (unless
	// that failed too, or the store panicked; see Pass).
	Skipped int
	// Panicked is the keys for which user code the Reconciler ran
	// panicked: the ReconcileFunc, the encoding of the verdict (see
	// Failed) or an observer. Each panic is recovered and reported in
	// Errors as a *ReconcilePanicError. A key whose ReconcileFunc or
	// encoding panicked is left held (and counted in Failed); an observer
	// panics after the store write its event reports, so the key is
	// counted by what was done (Resolved, LeftHeld) and that event is
	// dropped.
	Panicked int
	// Errors holds the first few errors of keys, each prefixed with its
	// scope and key: the ReconcileFunc's errors, encoding failures,
	// recovered panics, and the failure (a *StoreError) to end a key's
	// lease after the store error that Pass returns, or before the
	// Reconciler forgets it (to make room, as Skipped says).
	Errors []error
	// Done reports that the pass reached the end of the held keys (also
	// when a store error on the last of them ended it); the next Pass
	// starts over.
	Done bool
}

// maxReportedErrors bounds ReconcileReport.Errors.
const maxReportedErrors = 8

// keyReport reports what happened to one key in its pass's report.
type keyReport struct {
	rep      *ReconcileReport
	l        backends.Listed
	panicked bool
}

// fail reports err, a failure of the key, counting the key once in
// Panicked when err is a panic this Reconciler recovered (panicked). It
// runs none of err's methods but Error, which fmt recovers: err may be
// the ReconcileFunc's or the codec's, user code that runs outside the
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
func (kr *keyReport) emit(ctx context.Context, cfg *config, e Event) {
	defer func() {
		if p := recover(); p != nil {
			kr.fail(newReconcilePanic("observer", p), true)
		}
	}()
	cfg.emit(ctx, e)
}

// ReconcilePanicError reports a panic, recovered by a Reconciler, in the
// user code it ran for a key (see ReconcileReport.Panicked): the value it
// panicked with and the stack at the panic.
type ReconcilePanicError struct {
	// Hook is what panicked: "check" (the ReconcileFunc), "encode" (the
	// codec, or the settled value's or final error's methods, while the
	// verdict was encoded) or "observer".
	Hook  string
	Value any
	Stack []byte
}

func newReconcilePanic(hook string, p any) *ReconcilePanicError {
	return &ReconcilePanicError{Hook: hook, Value: p, Stack: debug.Stack()}
}

func (e *ReconcilePanicError) Error() string {
	what := e.Hook
	switch e.Hook {
	case "check":
		what = "the ReconcileFunc"
	case "encode":
		what = "encoding the verdict"
	}
	return fmt.Sprintf("once: reconciler: %s panicked: %v", what, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *ReconcilePanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
