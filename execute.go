package once

import (
	"context"
	"errors"
	"time"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/internal/envelope"
)

// Bounds of the writes made after fn returns. They run on a context
// detached from the caller's cancellation, so that a caller who gave up
// does not leave the outcome unrecorded or the claim held.
const (
	completeAttempts = 3
	completeBackoff  = 25 * time.Millisecond
	writeTimeout     = 5 * time.Second
)

// claim is a won claim on its way to being settled: completed with an
// outcome, released, or held until its lease ends.
type claim struct {
	scope    Scope
	key      string
	owner    string
	callCtx  context.Context // events
	detached context.Context // writes
	renewer  *renewer
	settled  bool
}

// settle runs when execute returns or panics, whatever panicked (fn, the
// codec, an error's methods, the classifier, the observer): it stops
// renewal, so that no renewal of the claim is sent after Do returns, and
// releases a claim whose fate was not decided, so that the key is
// claimable again at once.
func (c *claim) settle() {
	c.renewer.stop()
	if !c.settled {
		c.release()
	}
	c.renewer.recycle()
}

// release deletes the claim. The store write comes before the event, so a
// panicking observer cannot keep the key claimed.
func (c *claim) release() {
	c.settled = true
	c.renewer.stop()
	cfg := c.scope.cfg
	wctx := newWriteContext(c.detached, writeTimeout)
	defer wctx.end()
	start := cfg.clock()
	_, err := c.scope.store.Release(wctx, backends.ReleaseParams{Scope: c.scope.name, Key: c.key, Owner: c.owner})
	e := Event{Kind: EventReleased, Scope: c.scope.name, Key: c.key, Op: "release", StoreTime: cfg.since(start)}
	if err != nil {
		e.Kind, e.Err = EventStoreError, err
	}
	cfg.emit(c.callCtx, e)
}

// hold keeps the key held for the hold period (WithHoldFor): the store
// turns the claim into a held record. The store write comes before the
// event.
func (c *claim) hold(fnErr error) {
	c.settled = true
	c.renewer.stop()
	took, err := c.storeHold(fnErr)
	c.scope.cfg.emit(c.callCtx, Event{Kind: EventHeld, Scope: c.scope.name, Key: c.key, Class: ClassHold, FnErr: fnErr, Op: "hold", StoreTime: took, Err: err})
}

// execute reports the claim (event claimed), runs fn under it (owned by
// owner, claimed by a request sent at claimSent) and records its outcome.
func execute[T any](ctx context.Context, scope Scope, key, owner string, claimSent time.Time, claimed Event, fn func(context.Context) (T, error)) (Outcome[T], error) {
	cfg, store := scope.cfg, scope.store
	fnCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	c := &claim{scope: scope, key: key, owner: owner, callCtx: ctx, detached: context.WithoutCancel(ctx)}
	if _, exclusive := store.(backends.Exclusive); !exclusive {
		c.renewer = startRenewer(c.detached, store, cfg,
			backends.RenewParams{Scope: scope.name, Key: key, Owner: owner, Lease: cfg.lease}, claimSent, cancel)
	}
	defer c.settle()
	cfg.emit(ctx, claimed) // after the defer: a panicking observer cannot leave the claim unreleased

	start := cfg.clock()
	v, err := fn(fnCtx)
	class, fnErr := ClassRetry, error(nil)
	if err != nil {
		class, fnErr = classify(err, cfg.classifier)
	}
	cfg.emit(ctx, Event{Kind: EventExecuted, Scope: scope.name, Key: key, FnTime: cfg.since(start), Class: class, FnErr: fnErr})
	switch {
	case err == nil, class == ClassFinal:
		return record(c, v, fnErr)
	case class == ClassHold:
		c.hold(fnErr)
		return Outcome[T]{Value: v}, fnErr
	default:
		c.release()
		if errors.Is(context.Cause(fnCtx), ErrLeaseLost) {
			return Outcome[T]{Value: v, LeaseLost: true}, errors.Join(fnErr, ErrLeaseLost)
		}
		return Outcome[T]{Value: v}, fnErr
	}
}

// record completes the claim with fn's value (fnErr nil) or final error and
// returns what Do answers: what a replay of the stored outcome answers.
func record[T any](c *claim, v T, fnErr error) (Outcome[T], error) {
	cfg, scope, key := c.scope.cfg, c.scope, c.key
	data, encErr := encodeOutcome(cfg, v, fnErr)
	_, lossless := cfg.codec.(LosslessCodec)
	lossless = lossless && encErr == nil && fnErr == nil
	var first T
	var answer error
	if !lossless && len(data) <= cfg.maxOutcome {
		var decErr error
		first, answer, decErr = decodeOutcome[T](cfg, data)
		if decErr != nil { // the value does not come back: store why, as for one that does not encode
			data = encodeFailure(cfg, "decoded", decErr)
			first, answer, _ = decodeOutcome[T](cfg, data)
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
	start := cfg.clock()
	applied, err := complete(c, data)
	c.settled = true // completed, lost, or unrecorded: the claim is kept until its lease ends
	switch {
	case err != nil:
		cfg.emit(c.callCtx, Event{Kind: EventUnrecorded, Scope: scope.name, Key: key, Op: "complete", StoreTime: cfg.since(start), Err: err})
		return Outcome[T]{Value: v, Unrecorded: true}, errors.Join(fnErr, &UnrecordedError{Err: err})
	case !applied:
		cfg.emit(c.callCtx, Event{Kind: EventLeaseLost, Scope: scope.name, Key: key, Op: "complete", StoreTime: cfg.since(start), Err: ErrLeaseLost})
		return Outcome[T]{Value: v, LeaseLost: true}, errors.Join(fnErr, ErrLeaseLost)
	default:
		cfg.emit(c.callCtx, Event{Kind: EventRecorded, Scope: scope.name, Key: key, Op: "complete", StoreTime: cfg.since(start)})
		return Outcome[T]{Value: first, Recorded: true}, answer
	}
}

// encodeOutcome is the stored form of fn's value or final error. A value
// that does not encode is stored as a final error saying so; encErr
// reports it.
func encodeOutcome[T any](cfg *config, v T, fnErr error) (data []byte, encErr error) {
	if fnErr != nil {
		return encodeError(cfg, fnErr), nil
	}
	data, encErr = encodeValue(cfg.codec, v)
	if encErr != nil {
		return encodeFailure(cfg, "encoded", encErr), encErr
	}
	return data, nil
}

// complete stores the outcome, retrying a failing store a few times. The
// renewer keeps the lease alive between attempts, and no attempt holds
// renewals off past the proven lease, so no takeover starts while an
// attempt may still land.
func complete(c *claim, data []byte) (applied bool, err error) {
	cfg, scope := c.scope.cfg, c.scope
	p := backends.CompleteParams{Scope: scope.name, Key: c.key, Owner: c.owner, Outcome: data, Retention: cfg.retention}
	for attempt := range completeAttempts {
		if attempt > 0 {
			time.Sleep(completeBackoff << (attempt - 1))
		}
		start := cfg.clock()
		c.renewer.write(func(timeout time.Duration) bool {
			wctx := newWriteContext(c.detached, timeout)
			defer wctx.end()
			applied, err = scope.completeStore(wctx, p)
			return err == nil
		})
		if err == nil {
			return applied, nil
		}
		cfg.emit(c.callCtx, Event{Kind: EventStoreError, Scope: scope.name, Key: c.key, Op: "complete", StoreTime: cfg.since(start), Err: err})
	}
	return false, err
}
