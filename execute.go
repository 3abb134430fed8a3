package once

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/envelope"
)

// Bounds of the writes made after fn returns. They run on a context
// detached from the caller's cancellation, so that a caller who gave up
// does not leave the outcome unrecorded or the claim unsettled. A Complete
// or a Hold is tried completeAttempts times; a Release once.
const (
	completeAttempts = 3
	completeBackoff  = 25 * time.Millisecond
	writeTimeout     = 5 * time.Second
)

// claim is a won claim on its way to being settled: completed with an
// outcome, released, or held until its lease ends.
type claim struct {
	scope   Scope
	key     string
	owner   string
	callCtx context.Context // events; writes detach from it
	renewer *renewer
	fnCtx   fnContext
	steps   stepLog
	settled bool
	// firstWrite is the context of the claim's first write (writeCtx);
	// wrote reports it used.
	firstWrite writeContext
	wrote      bool
	// panicked and panicValue hold the first panic of a hook that ran
	// after fn returned (an observer, the codec, a held error's methods),
	// recovered so that the claim is settled as it would have been without
	// it; execute re-raises it once the claim is settled. panicMu guards
	// them: steps may run on goroutines of fn.
	panicMu    sync.Mutex
	panicked   bool
	panicValue any
}

// cancel ends fn's context with cause: ErrLeaseLost when the claim is
// lost, nil (context.Canceled) when Do returns. The first cause counts.
func (c *claim) cancel(cause error) { c.fnCtx.end(cause) }

// keepPanic keeps p, the value of a recovered hook panic, unless an earlier
// one is kept already: the first panic is the one Do re-raises.
func (c *claim) keepPanic(p any) {
	c.panicMu.Lock()
	defer c.panicMu.Unlock()
	if !c.panicked {
		c.panicked, c.panicValue = true, p
	}
}

// keptPanic returns the panic keepPanic kept, if any.
func (c *claim) keptPanic() (bool, any) {
	c.panicMu.Lock()
	defer c.panicMu.Unlock()
	return c.panicked, c.panicValue
}

// emit reports e to the observer. A panic in the observer is kept (see
// keepPanic) rather than let it change how the claim is settled.
func (c *claim) emit(e Event) {
	if c.scope.cfg.observer == nil {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			c.keepPanic(p)
		}
	}()
	c.scope.cfg.observer(c.callCtx, e)
}

// settle runs when execute returns or panics, whatever panicked (fn, the
// classifier, a final error's methods, the store, or the observer on
// EventClaimed, before fn ran): it stops renewal, without waiting for a
// renewal in flight, so that no renewal of the claim is sent after Do
// returns, and releases a claim whose fate was not decided, so that the
// key is claimable again at once.
func (c *claim) settle() {
	c.steps.close()
	c.renewer.stop()
	if !c.settled {
		c.release()
	}
	c.renewer.recycle()
}

// release deletes the claim. The store write comes before the event.
func (c *claim) release() {
	c.settled = true
	c.renewer.stop()
	cfg := c.scope.cfg
	wctx := c.writeCtx(writeTimeout)
	defer wctx.end()
	start := cfg.clock()
	_, err := c.scope.store.Release(wctx, backends.ReleaseParams{Scope: c.scope.name, Key: c.key, Owner: c.owner})
	e := Event{Kind: EventReleased, Scope: c.scope.name, Key: c.key, Op: "release", StoreTime: cfg.since(start)}
	if err != nil {
		e.Kind, e.Err = EventStoreError, err
	}
	c.emit(e)
}

// execute reports the claim (event claimed), runs fn under it (owned by
// owner, claimed by a request sent at claimSent) and records its outcome.
//
// Once fn has returned, no hook decides how the claim is settled: a panic
// of the observer, of the codec on fn's value, or of a held error's
// methods is recovered, the claim is settled as for no panic (a codec
// panic as a codec error), and execute then panics with the first such
// value.
func execute[T any](ctx context.Context, scope Scope, key, owner string, claimSent time.Time, claimed Event, steps []byte, fn func(context.Context) (T, error)) (Outcome[T], error) {
	cfg, store := scope.cfg, scope.store
	c := &claim{scope: scope, key: key, owner: owner, callCtx: ctx}
	c.fnCtx.parent, c.fnCtx.claim = ctx, c
	defer c.cancel(nil)
	c.steps.stored = steps
	if !scope.inTx {
		c.renewer = startRenewer(ctx, store, cfg,
			backends.RenewParams{Scope: scope.name, Key: key, Owner: owner, Lease: cfg.lease}, claimSent, c)
	}
	defer c.settle()
	cfg.emit(ctx, claimed) // after the defer: a panicking observer cannot leave the claim unreleased

	start := cfg.clock()
	v, err := fn(&c.fnCtx)
	out, answer := settleOutcome(c, &c.fnCtx, start, v, err)
	if panicked, p := c.keptPanic(); panicked {
		panic(p) // the claim is settled: the deferred settle only stops renewal
	}
	return out, answer
}

// settleOutcome classifies fn's result (v, err) and settles the claim
// with it: completed, held or released.
func settleOutcome[T any](c *claim, fnCtx context.Context, start time.Time, v T, err error) (Outcome[T], error) {
	cfg := c.scope.cfg
	c.endSteps()
	class, fnErr := ClassRetry, error(nil)
	if err != nil {
		class, fnErr = classify(err, cfg.classifier)
	}
	c.emit(Event{Kind: EventExecuted, Scope: c.scope.name, Key: c.key, FnTime: cfg.since(start), Class: class, FnErr: fnErr})
	switch {
	case err == nil, class == ClassFinal:
		return record(c, v, fnErr)
	case class == ClassHold:
		applied, err := c.hold(fnErr)
		switch {
		case err != nil:
			return Outcome[T]{Value: v, Status: HoldUnrecorded}, errors.Join(fnErr, &UnrecordedError{Err: err})
		case !applied:
			return Outcome[T]{Value: v, Status: LeaseLost}, errors.Join(fnErr, ErrLeaseLost)
		}
		return Outcome[T]{Value: v, Status: Held, RetryAfter: cfg.holdPeriod()}, fnErr
	default:
		c.release()
		if errors.Is(context.Cause(fnCtx), ErrLeaseLost) {
			return Outcome[T]{Value: v, Status: LeaseLost}, errors.Join(fnErr, ErrLeaseLost)
		}
		return Outcome[T]{Value: v, Status: Released}, fnErr
	}
}

// record completes the claim with fn's value (fnErr nil) or final error and
// returns what Do answers: what a replay of the stored outcome answers.
// A panic of user code while encoding the outcome or decoding it back is
// stored as a codec error would be, as a final error saying so, and kept
// for execute to re-raise.
func record[T any](c *claim, v T, fnErr error) (Outcome[T], error) {
	cfg, scope, key := c.scope.cfg, c.scope, c.key
	data, first, answer := storedForm(c, v, fnErr)
	start := cfg.clock()
	applied, err := c.writeBack("complete", func(ctx context.Context) (bool, error) {
		return scope.store.Complete(ctx, backends.CompleteParams{Scope: scope.name, Key: key, Owner: c.owner, Outcome: data, Retention: cfg.retention})
	})
	c.settled = true // completed, lost, or unrecorded: the claim is kept until its lease ends
	switch {
	case err != nil:
		c.emit(Event{Kind: EventUnrecorded, Scope: scope.name, Key: key, Op: "complete", StoreTime: cfg.since(start), Err: err})
		return Outcome[T]{Value: v, Status: Unrecorded}, errors.Join(fnErr, &UnrecordedError{Err: err})
	case !applied:
		c.emit(Event{Kind: EventLeaseLost, Scope: scope.name, Key: key, Op: "complete", StoreTime: cfg.since(start), Err: ErrLeaseLost})
		return Outcome[T]{Value: v, Status: LeaseLost}, errors.Join(fnErr, ErrLeaseLost)
	default:
		c.emit(Event{Kind: EventRecorded, Scope: scope.name, Key: key, Op: "complete", StoreTime: cfg.since(start)})
		return Outcome[T]{Value: first, Status: Recorded}, answer
	}
}

// storedForm returns the stored form of fn's value v (fnErr nil) or
// final error fnErr, and what a replay of it answers: the value and final
// error the first caller gets. A panic of user code while encoding the
// outcome or decoding it back is stored as a codec error would be, as a
// final error saying so, and kept for execute to re-raise.
func storedForm[T any](c *claim, v T, fnErr error) (data []byte, first T, answer error) {
	cfg := c.scope.cfg
	data, encErr := encodeOutcome(c, v, fnErr)
	lossless := encErr == nil && fnErr == nil && roundTrips[T](cfg.codec, data)
	if !lossless && len(data) <= cfg.maxOutcome {
		var decErr error
		first, answer, decErr = decodeFirst[T](c, data)
		if decErr != nil { // the value does not come back: store why, as for one that does not encode
			data = encodeFailure(cfg, "decoded", decErr)
			first, answer, _ = decodeFirst[T](c, data)
		}
	}
	switch {
	case len(data) > cfg.maxOutcome:
		data = envelope.TooLarge(len(data), cfg.maxOutcome)
		_, answer, _ = decodeOutcome[T](cfg, data)
		first = v // documented: the first caller of a too-large value still gets it
	case lossless:
		first = v
	}
	return data, first, answer
}

// roundTrips reports whether decoding data, the codec c's stored form of
// a value of type T, gives back that value itself, so that the first
// caller may get it as it is: c declares its round trip lossless (Codec),
// or c is encoding/json, T's round trip is exact (jsonExact), and no
// string of the value held bytes that are not UTF-8, which json stores as
// the replacement character (escaped or not: a value holding one is
// decoded, to be safe).
func roundTrips[T any](c Codec, data []byte) bool {
	switch c.(type) {
	case interface{ Lossless() }:
		return true
	case jsonCodec:
		return jsonExact(reflect.TypeFor[T]()) &&
			!bytes.Contains(data, []byte(`\ufffd`)) && !bytes.Contains(data, []byte("\uFFFD"))
	}
	return false
}

// encodeOutcome is the stored form of fn's value or final error. A value
// that does not encode is stored as a final error saying so; encErr
// reports it. So is an outcome whose encoding panics (in the codec, the
// value's MarshalJSON, or the final error's Error or ErrorCode): the panic
// is kept on the claim for execute to re-raise.
func encodeOutcome[T any](c *claim, v T, fnErr error) (data []byte, encErr error) {
	cfg := c.scope.cfg
	defer func() {
		if p := recover(); p != nil {
			c.keepPanic(p)
			encErr = panicError(p)
			data = encodeFailure(cfg, "encoded", encErr)
		}
	}()
	if fnErr != nil {
		return encodeError(cfg, fnErr), nil
	}
	data, encErr = encodeValue(cfg.codec, v)
	if encErr != nil {
		return encodeFailure(cfg, "encoded", encErr), encErr
	}
	return data, nil
}

// decodeFirst is decodeOutcome for the first caller's answer, with a panic
// of the codec kept on the claim and returned as the decode failure.
func decodeFirst[T any](c *claim, data []byte) (v T, answer, decErr error) {
	defer func() {
		if p := recover(); p != nil {
			c.keepPanic(p)
			var zero T
			v, answer, decErr = zero, nil, panicError(p)
		}
	}()
	return decodeOutcome[T](c.scope.cfg, data)
}

// writeBack runs write, a store write settling the claim (a Complete or a
// Hold, named op in the events), retrying a failing store a few times.
// No attempt waits for a renewal (see renewer.write). The renewer keeps
// the lease alive between attempts, and each attempt's
// timeout ends a renewal interval before the proven lease when it can (at
// least one interval: an attempt that lands past the proven lease is
// still fenced by the owner token, so it applies only if nobody took the
// key over). It reports the last attempt's result.
func (c *claim) writeBack(op string, write func(ctx context.Context) (bool, error)) (applied bool, err error) {
	cfg := c.scope.cfg
	for attempt := range completeAttempts {
		if attempt > 0 {
			time.Sleep(completeBackoff << (attempt - 1))
		}
		start := cfg.clock()
		c.renewer.write(func(timeout time.Duration) bool {
			wctx := c.writeCtx(timeout)
			defer wctx.end()
			applied, err = write(wctx)
			return err == nil
		})
		if err == nil {
			return applied, nil
		}
		c.emit(Event{Kind: EventStoreError, Scope: c.scope.name, Key: c.key, Op: op, StoreTime: cfg.since(start), Err: err})
	}
	return false, err
}

// writeCtx returns the context of a write of the claim's owner (Do's
// goroutine makes them one at a time): the claim's own for its first
// write, a new one for each later, since a store may keep a context past
// its write.
func (c *claim) writeCtx(timeout time.Duration) *writeContext {
	if c.wrote {
		return newWriteContext(c.callCtx, timeout)
	}
	c.wrote = true
	c.firstWrite.init(c.callCtx, timeout)
	return &c.firstWrite
}

// panicError stands for a recovered panic of user code where an error is
// stored or returned. fmt recovers a panic of the value's own Error or
// String method.
func panicError(p any) error { return fmt.Errorf("panic: %v", p) }
