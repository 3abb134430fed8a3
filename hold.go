package once

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stagedoor/once/backends"
)

// HoldUntilResolved, given to WithHoldFor, holds a key until its real
// outcome is stored (Resolve, package reconcile, or the CLI's resolve): it never
// runs fn again by itself.
const HoldUntilResolved = backends.HoldUntilResolved

// WithHoldFor sets how long a key stays held after fn's error was marked
// with Hold (its outcome is unknown: a timeout after the request left).
// While held, every call with the key gets an *InProgressError whose Held
// is true and whose RetryAfter is the hold left; when the hold ends, the
// next call runs fn again.
//
// The default, 0, holds for one lease (WithLease), as a running claim
// would: the key heals itself, which is safe when fn's downstream call
// carries a DerivedKey (the provider recognises the retry and answers the
// first attempt's result instead of acting twice) — the way this package
// recommends calling out. When the downstream service cannot deduplicate,
// running fn again after any finite hold may repeat the effect: use
// HoldUntilResolved, and run a reconcile.Job (or an operator's `once list
// --state held` and `once resolve`) to settle each held key. A held key is
// never silently wedged: stores that implement backends.Lister list and
// count it.
//
// The key is held by one store write after fn returned, retried as the
// write of an outcome is. If every attempt fails, the key is not held: Do
// returns fn's error joined with an *UnrecordedError (ErrOutcomeUnrecorded)
// and Outcome.Status HoldUnrecorded, and the key runs fn again after its lease, even
// with HoldUntilResolved.
//
// A negative d keeps the current value.
func WithHoldFor(d time.Duration) Option {
	return func(c *config) {
		if d >= 0 {
			c.holdFor = d
		}
	}
}

// holdPeriod is the hold of a held claim under cfg.
func (c *config) holdPeriod() time.Duration {
	if c.holdFor == 0 {
		return c.lease
	}
	return c.holdFor
}

// heldCode returns the code of a held error (its ErrorCode method) and
// its message, each made storable (backends.HeldProblem): invalid UTF-8
// and NUL replaced with U+FFFD, then cut to backends.MaxHeldCodeLen and
// MaxHeldMessageLen at a UTF-8 boundary. A store refuses anything else,
// and a Hold must not fail on an error's text. They are kept for
// operators (once get, once list), never answered to another caller.
//
// ErrorCode and Error are user code, and the key must be held whatever
// they do: a panic in ErrorCode leaves the code empty, a panic in Error
// makes the message heldPanicMessage, and the first panic is kept on the
// claim, to be re-raised once the key is held.
func (c *claim) heldCode(err error) (code, message string) {
	code = c.held(func() string {
		var coded interface{ ErrorCode() string }
		if errors.As(err, &coded) {
			return coded.ErrorCode()
		}
		return ""
	}, "")
	message = c.held(err.Error, heldPanicMessage)
	return heldText(code, backends.MaxHeldCodeLen), heldText(message, backends.MaxHeldMessageLen)
}

// heldPanicMessage is the message of a held key whose error's Error method
// panicked.
const heldPanicMessage = "once: the held error's Error method panicked"

// held returns text(), or placeholder when it panics: the panic is then
// kept on the claim (see keepPanic).
func (c *claim) held(text func() string, placeholder string) (s string) {
	defer func() {
		if p := recover(); p != nil {
			c.keepPanic(p)
			s = placeholder
		}
	}()
	return text()
}

// heldText returns s with invalid UTF-8 and NUL replaced with U+FFFD, cut
// to at most n bytes at a UTF-8 boundary. It allocates only when s has
// such bytes.
func heldText(s string, n int) string {
	s = cut(s, n)
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	// The replacements may make s longer than n again: cut once more.
	return cut(strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD"), n)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// hold turns the claim into a held record for the hold period
// (WithHoldFor), retrying a failing store as a completion is retried (see
// writeBack), and reports the event after the store write. applied false
// with err nil means the claim had been lost (taken over) before it could
// be held; err is the last store failure when every attempt failed. Either
// way the claim is left as it is until its lease ends.
func (c *claim) hold(fnErr error) (applied bool, err error) {
	cfg := c.scope.cfg
	code, message := c.heldCode(fnErr)
	p := backends.HoldParams{
		Scope: c.scope.name, Key: c.key, Owner: c.owner, For: cfg.holdPeriod(),
		Code: code, Message: message, Retention: cfg.retention,
	}
	start := cfg.clock()
	applied, err = c.writeBack("hold", func(ctx context.Context) (bool, error) { return c.scope.store.Hold(ctx, p) })
	c.settled = true
	e := Event{Kind: EventHeld, Scope: c.scope.name, Key: c.key, Class: ClassHold, FnErr: fnErr, Op: "hold", StoreTime: cfg.since(start), Err: err}
	if err == nil && !applied {
		e.Err = ErrLeaseLost
	}
	c.emit(e)
	return applied, err
}
