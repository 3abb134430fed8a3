package once

import (
	"context"
	"errors"
	"strconv"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/checkpoints"
)

// Step runs fn as the step called name of the intent whose fn runs on ctx
// (the fn of Do or DoOutcome, a handler of package oncehttp, a consumer of
// package consume), and checkpoints its outcome in the intent's record,
// fenced by the claim, before it returns. A later execution of the same
// intent — a takeover after a crash, a retry after a retryable error, a
// held key run again — gets the checkpointed outcome back without running
// fn, so that an intent of several effects resumes where it stopped; a
// replay of a completed intent runs no step at all.
//
// The outcome is stored and answered by Do's rules: a value through the
// scope's codec, an error fn marked Final as a final error
// (RegisterError's types come back typed), returned marked Final, so that
// fn returning it stores it as the intent's answer too. The first
// execution gets what every later one gets. A retryable error is not
// checkpointed (the step runs again next time) and a held one neither
// (Hold: the key is held as for any held error); both are returned as fn
// returned them. A panic propagates, as in Do.
//
// A step is at least once: a crash after fn acted and before its
// checkpoint was written runs it again, so its effect should carry a
// DerivedKey. StepTx makes a database effect exactly once;
// StepAtMostOnce makes an effect that cannot be repeated happen at most
// once.
//
// Names are unique within an execution: a second Step with the same name
// returns an *InvalidInputError (Field "step"), as do an invalid name (the
// rules of ValidateKey) and a ctx that carries no intent. A checkpoint
// that no step of an execution uses is kept and reported
// (EventStepUnmatched), never given to another step. If a checkpoint
// cannot be written, Step returns fn's value with ErrLeaseLost (the claim
// was taken over; fn's context ends) or an *UnrecordedError, and every
// later Step of the execution returns the same error.
//
// Inside DoTx the checkpoints are written in DoTx's transaction, so they
// commit with the intent's outcome or not at all: a crash undoes them
// with the rest.
func Step[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) (T, error) {
	return step(ctx, name, fn, false)
}

// StepAtMostOnce is Step for an effect that cannot be repeated, and carries
// no key the downstream service deduplicates: it happens at most once. The
// step is marked started, in one more checkpoint write, before fn runs. An
// execution that finds it started but not finished (the process died, or
// fn panicked, while fn ran) does not run it again: StepAtMostOnce returns
// an error that matches ErrStepInterrupted, marked Hold, so that fn
// returning it holds the key for Resolve, a reconcile.Job or an operator,
// who see in the held record's code ("once_step_interrupted") and message
// which step it was. A retryable error from fn removes the mark (fn did
// not act), in one more write, unless fn's context had ended by then (the
// claim's lease was about to lapse, or the caller gave up): fn's call may
// have left, so the mark stays. Everything else is as for Step.
func StepAtMostOnce[T any](ctx context.Context, name string, fn func(context.Context) (T, error)) (T, error) {
	return step(ctx, name, fn, true)
}

// step runs a Step, marked started before fn runs when atMostOnce.
func step[T any](ctx context.Context, name string, fn func(context.Context) (T, error), atMostOnce bool) (T, error) {
	var zero T
	c, err := stepOf(ctx, name, fn == nil)
	if err != nil {
		return zero, err
	}
	if v, err, done := resumeStep[T](c, name); done {
		return v, err
	}
	if atMostOnce {
		if err := c.writeStep(checkpoints.Step{Name: name, State: checkpoints.Started}, false); err != nil {
			return zero, err
		}
	}
	start := c.scope.cfg.clock()
	v, err := fn(ctx)
	class, fnErr := stepClass(c, err)
	if err != nil && class != ClassFinal {
		// A retryable error means fn did not act, so the step may run
		// again, unless fn's context had ended: its call may have left
		// before the cancellation (the lease watchdog's, or the caller's)
		// reached it, so the mark stays and the next execution holds the
		// key.
		if class == ClassRetry && atMostOnce && ctx.Err() == nil {
			if werr := c.writeStep(checkpoints.Step{Name: name}, true); werr != nil {
				err = errors.Join(err, werr)
			}
		}
		c.emit(Event{Kind: EventStep, Scope: c.scope.name, Key: c.key, Step: name, FnTime: c.scope.cfg.since(start), Class: class, FnErr: fnErr})
		return v, err
	}
	data, first, answer := storedForm(c, v, fnErr)
	wstart := c.scope.cfg.clock()
	if werr := c.writeStep(checkpoints.Step{Name: name, State: checkpoints.Done, Outcome: data}, false); werr != nil {
		return v, errors.Join(err, werr)
	}
	c.emit(Event{Kind: EventStep, Scope: c.scope.name, Key: c.key, Step: name, Op: "checkpoint", StoreTime: c.scope.cfg.since(wstart), FnTime: wstart.Sub(start), Class: class, FnErr: fnErr})
	return first, Final(answer)
}

// StepTx is Step for an effect made of database writes: begin opens a
// transaction and returns it with the store bound to it (a SQL store's
// BeginTx method, as for DoTx), fn writes through tx, and the step's
// checkpoint is written in the same transaction before the commit, so that
// the writes and the checkpoint commit together or not at all: the effect
// happens exactly once per intent, and a crash, a lost claim or a
// retryable error leaves neither. Its store must be the intent's (the same
// database and table). It commits when fn returned a value or a final
// error, and rolls back otherwise.
//
// If the commit fails, StepTx returns fn's value with an *UnrecordedError
// whose Err is a *StoreError of Op "commit": the writes and the
// checkpoint were then committed together or not at all, and the next
// execution of the intent finds out which. Inside DoTx, StepTx returns an
// *InvalidInputError (Field "ctx"): use Step, whose checkpoint is written
// in DoTx's own transaction.
func StepTx[X Tx, T any](ctx context.Context, name string, begin func(context.Context) (X, backends.Store, error), fn func(context.Context, X) (T, error)) (T, error) {
	var zero T
	c, err := stepOf(ctx, name, fn == nil)
	if err != nil {
		return zero, err
	}
	if begin == nil {
		return zero, &InvalidInputError{Field: "begin", Reason: "nil"}
	}
	if c.scope.inTx {
		return zero, &InvalidInputError{Field: "ctx", Reason: "inside DoTx, whose transaction holds the claim: use Step"}
	}
	if v, err, done := resumeStep[T](c, name); done {
		return v, err
	}
	tx, store, err := begin(ctx)
	if err != nil {
		return zero, &StoreError{Op: "begin", Err: err}
	}
	committed := false
	defer func() {
		if !committed {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	start := c.scope.cfg.clock()
	v, err := fn(ctx, tx)
	class, fnErr := stepClass(c, err)
	if err != nil && class != ClassFinal {
		c.emit(Event{Kind: EventStep, Scope: c.scope.name, Key: c.key, Step: name, FnTime: c.scope.cfg.since(start), Class: class, FnErr: fnErr})
		return v, err
	}
	data, first, answer := storedForm(c, v, fnErr)
	wstart := c.scope.cfg.clock()
	werr := c.writeStepTx(checkpoints.Step{Name: name, State: checkpoints.Done, Outcome: data}, store, func(ctx context.Context) error {
		committed = true
		return tx.Commit(ctx)
	})
	if werr != nil {
		return v, errors.Join(err, werr)
	}
	c.emit(Event{Kind: EventStep, Scope: c.scope.name, Key: c.key, Step: name, Op: "checkpoint", StoreTime: c.scope.cfg.since(wstart), FnTime: wstart.Sub(start), Class: class, FnErr: fnErr})
	return first, Final(answer)
}

// stepInterrupted is the error of an at-most-once step (StepAtMostOnce)
// found started but not finished: its effect may or may not have
// happened. It matches ErrStepInterrupted.
type stepInterrupted struct{ step string }

func (e *stepInterrupted) Error() string {
	return "once: step " + strconv.Quote(e.step) + " was started and did not finish: its outcome is unknown"
}

// ErrorCode returns "once_step_interrupted", the code of the held record.
func (e *stepInterrupted) ErrorCode() string { return "once_step_interrupted" }

// Is reports whether target is ErrStepInterrupted.
func (e *stepInterrupted) Is(target error) bool { return target == ErrStepInterrupted }

// stepOf returns the claim of the intent ctx carries, after checking a
// step's arguments.
func stepOf(ctx context.Context, name string, nilFn bool) (*claim, error) {
	if err := validateContext(ctx); err != nil {
		return nil, err
	}
	if nilFn {
		return nil, &InvalidInputError{Field: "fn", Reason: "nil"}
	}
	if err := validateName("step", name, backends.MaxKeyLen); err != nil {
		return nil, err
	}
	c, ok := ctx.Value(claimKey{}).(*claim)
	if !ok {
		return nil, &InvalidInputError{Field: "ctx", Reason: "carries no intent: call a step inside the fn of Do"}
	}
	return c, nil
}

// resumeStep answers the step called name from its checkpoint: done
// reports that there was one (or that the step may not run), and v and
// err are then the step's answer.
func resumeStep[T any](c *claim, name string) (v T, err error, done bool) {
	prior, err := c.steps.begin(name)
	switch {
	case err != nil:
		return v, err, true
	case prior.State == checkpoints.Done:
		v, finalErr, decErr := decodeOutcome[T](c.scope.cfg, prior.Outcome)
		c.emit(Event{Kind: EventStepReplayed, Scope: c.scope.name, Key: c.key, Step: name, FnErr: finalErr, Err: decErr})
		if decErr != nil {
			return v, decErr, true
		}
		return v, Final(finalErr), true
	case prior.State == checkpoints.Started:
		err := &stepInterrupted{step: name}
		c.emit(Event{Kind: EventStep, Scope: c.scope.name, Key: c.key, Step: name, Class: ClassHold, FnErr: err})
		return v, Hold(err), true
	}
	return v, nil, false
}

// stepClass classifies a step's error as Do classifies fn's.
func stepClass(c *claim, err error) (Class, error) {
	if err == nil {
		return ClassRetry, nil
	}
	return classify(err, c.scope.cfg.classifier)
}
