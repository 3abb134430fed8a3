package once

import (
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stagedoor/once/backends"
)

// HoldUntilResolved, given to WithHoldFor, holds a key until its real
// outcome is stored (Resolve, a Reconciler, or the CLI's resolve): it never
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
// HoldUntilResolved, and run a Reconciler (or an operator's `once list
// --state held` and `once resolve`) to settle each held key. A held key is
// never silently wedged: stores that implement backends.Lister list and
// count it.
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
func heldCode(err error) (code, message string) {
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) {
		code = coded.ErrorCode()
	}
	return heldText(code, backends.MaxHeldCodeLen), heldText(err.Error(), backends.MaxHeldMessageLen)
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

// storeHold turns the claim into a held record, on the detached context.
// It reports the store operation's duration and outcome for the event:
// ErrLeaseLost means the claim had been lost (taken over) before it could
// be held.
func (c *claim) storeHold(fnErr error) (took time.Duration, err error) {
	cfg := c.scope.cfg
	code, message := heldCode(fnErr)
	wctx := newWriteContext(c.detached, writeTimeout)
	defer wctx.end()
	start := cfg.clock()
	applied, err := c.scope.store.Hold(wctx, backends.HoldParams{
		Scope: c.scope.name, Key: c.key, Owner: c.owner, For: cfg.holdPeriod(),
		Code: code, Message: message, Retention: cfg.retention,
	})
	if err == nil && !applied {
		err = ErrLeaseLost
	}
	return cfg.since(start), err
}
