// Package onceslog logs the events of once calls with log/slog.
//
//	k := once.New(store, once.WithObserver(onceslog.Observer(slog.Default(), nil)))
//
// # What is logged
//
// Each line carries the event's scope in clear (often a user or tenant
// id), its key as key_hash, and, when the event has them, the text of fn's
// error (fn_error: whatever fn put in it) and of the machinery's (error).
//
// Keys are not logged in clear by default: idempotency keys can be
// guessable (order numbers) or carry personal data, and a log line is read by
// more people than the store is. Each key is logged as key_hash, the first
// 16 hex digits of its SHA-256, which is enough to correlate the lines of one
// key. Set Config.ClearKeys to log keys as they are.
//
// Scopes and error texts are logged as they are. To redact them, use the
// handler's slog.HandlerOptions.ReplaceAttr, which sees every attribute
// by name, for example:
//
//	ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
//		switch a.Key {
//		case "scope":
//			return slog.String("scope_hash", onceslog.KeyHash(a.Value.String()))
//		case "fn_error":
//			return slog.Attr{} // dropped
//		}
//		return a
//	}
//
// # A logger never changes a call
//
// The observer recovers a panic raised inside it — by the logger's
// handler, Config.Level, or an error's Error method — and drops that
// event's line, so a faulty handler can neither crash a call nor change
// what Do returns (the core lets an observer's panic out of Do, after the
// outcome was stored).
package onceslog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"

	"github.com/stagedoor/once"
)

// Config configures the observer. A nil *Config means defaults.
type Config struct {
	// ClearKeys logs keys in clear (attribute "key") instead of their hash
	// (attribute "key_hash"). Defaults to false.
	ClearKeys bool
	// Level maps an event to the level it is logged at. Defaults to
	// DefaultLevel.
	Level func(once.Event) slog.Level
}

// DefaultLevel logs at Warn every event that carries a failure of the
// machinery (Event.Err: a store error, a lost lease, an unrecorded
// outcome, an undecodable replay or checkpoint, a failed hold write or
// checkpoint, a reconcile.Check's error), the kinds that always do (lease
// lost, unrecorded, store error), a checkpoint no step used (step
// unmatched: a step renamed or removed while intents were in flight) and
// an at-most-once step found interrupted (a step event whose error
// matches once.ErrStepInterrupted: an earlier execution stopped inside
// it, and the key is held); at Info duplicates, releases and what settles a key by other means than fn (in
// progress, key reused, released, held, resolved); and at Debug the
// events of a healthy call (claimed, executed, recorded, replayed,
// renewed, step, step replayed) and a reconcile.Job's visit that left a
// key held (reconciled, without an error).
func DefaultLevel(e once.Event) slog.Level {
	if e.Err != nil {
		return slog.LevelWarn
	}
	switch e.Kind {
	case once.EventLeaseLost, once.EventUnrecorded, once.EventStoreError, once.EventStepUnmatched:
		return slog.LevelWarn
	case once.EventStep:
		if isInterrupted(e.FnErr) {
			return slog.LevelWarn
		}
		return slog.LevelDebug
	case once.EventInProgress, once.EventKeyReused, once.EventReleased, once.EventHeld, once.EventResolved:
		return slog.LevelInfo
	default:
		return slog.LevelDebug
	}
}

// Observer returns a once.Observer that logs every event to logger as one
// line with the message "once <event>" and the attributes scope, key_hash
// (or key), and, when the event sets them: step (the step's name), op,
// store_time, fn_time, class, took_over, fn_error (fn's or the step's
// error, or the replayed final error) and error (a failure of the store or
// of the claim, never fn's). A panic inside it
// is recovered and the line dropped (see the package documentation).
func Observer(logger *slog.Logger, cfg *Config) once.Observer {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Level == nil {
		c.Level = DefaultLevel
	}
	return func(ctx context.Context, e once.Event) {
		defer func() { _ = recover() }() // a faulty handler drops its line, never changes the call
		level := c.Level(e)
		if !logger.Enabled(ctx, level) {
			return
		}
		attrs := make([]slog.Attr, 0, 8)
		attrs = append(attrs, slog.String("scope", e.Scope))
		if c.ClearKeys {
			attrs = append(attrs, slog.String("key", e.Key))
		} else {
			attrs = append(attrs, slog.String("key_hash", KeyHash(e.Key)))
		}
		if e.Step != "" {
			attrs = append(attrs, slog.String("step", e.Step))
		}
		if e.Op != "" {
			attrs = append(attrs, slog.String("op", e.Op))
		}
		if e.StoreTime > 0 {
			attrs = append(attrs, slog.Duration("store_time", e.StoreTime))
		}
		if e.FnTime > 0 {
			attrs = append(attrs, slog.Duration("fn_time", e.FnTime))
		}
		if e.FnErr != nil && (e.Kind == once.EventExecuted || e.Kind == once.EventHeld || e.Kind == once.EventStep) {
			attrs = append(attrs, slog.String("class", e.Class.String()))
		}
		if e.TookOver {
			attrs = append(attrs, slog.Bool("took_over", true))
		}
		if e.FnErr != nil {
			attrs = append(attrs, slog.String("fn_error", e.FnErr.Error()))
		}
		if e.Err != nil {
			attrs = append(attrs, slog.String("error", e.Err.Error()))
		}
		logger.LogAttrs(ctx, level, "once "+e.Kind.String(), attrs...)
	}
}

// isInterrupted reports whether err says an at-most-once step was
// interrupted (once.ErrStepInterrupted).
func isInterrupted(err error) bool { return errors.Is(err, once.ErrStepInterrupted) }

// KeyHash returns the first 16 hex digits of the SHA-256 of key: the form
// in which keys are logged by default.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}
