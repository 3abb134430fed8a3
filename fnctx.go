package once

import (
	"context"
	"sync"
	"time"
)

// fnContext is the context fn runs on: the call's, ended when the claim is
// lost (cause ErrLeaseLost) or Do returns (context.Canceled), whichever
// comes first, and carrying the claim for Step. It is a field of the
// claim, so that carrying it costs no allocation.
//
// It is the context.WithCancelCause of the call's context that fn would
// otherwise get, made on the first use of Done, Err or Value (Step's
// look-up of the claim aside): a fn that never looks at its context costs
// no cancel context. Made after the end, it is ended at once with the
// cause the end had, so fn, and a goroutine of fn that outlives Do, see
// what they would have seen had it been made at the start.
type fnContext struct {
	parent context.Context
	claim  *claim

	mu    sync.Mutex
	inner context.Context // made by arm
	stop  context.CancelCauseFunc
	ended bool  // end ran before arm
	cause error // the cause end was given, nil for Do's return
}

func (f *fnContext) Deadline() (time.Time, bool) { return f.parent.Deadline() }

func (f *fnContext) Done() <-chan struct{} { return f.arm().Done() }

func (f *fnContext) Err() error { return f.arm().Err() }

func (f *fnContext) Value(key any) any {
	if key == (claimKey{}) {
		return f.claim
	}
	return f.arm().Value(key)
}

func (f *fnContext) String() string { return "once.fnContext" }

// arm returns the cancel context, making it on first use: a
// context.WithCancelCause of the call's context, or, after end, one of the
// call's context detached from its cancellation, ended at once with end's
// cause (end saw the call's context live, so its cause is the one that
// counts).
func (f *fnContext) arm() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inner == nil {
		if f.ended {
			f.inner, f.stop = context.WithCancelCause(context.WithoutCancel(f.parent))
			f.stop(f.cause)
		} else {
			f.inner, f.stop = context.WithCancelCause(f.parent)
		}
	}
	return f.inner
}

// end ends fn's context with cause (nil: context.Canceled, Do returned);
// the first end, or the call's cancellation before it, decides the
// cause. Without a cancel context yet, it records the cause for arm; one
// is made at once only when the call's context already ended, so that the
// call's cause wins as it would have.
func (f *fnContext) end(cause error) {
	f.mu.Lock()
	if f.inner == nil && (f.ended || f.parent.Err() == nil) {
		if !f.ended {
			f.ended, f.cause = true, cause
		}
		f.mu.Unlock()
		return
	}
	f.mu.Unlock()
	f.arm()
	f.stop(cause)
}
