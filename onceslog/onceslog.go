// Package onceslog logs the events of once calls with log/slog.
//
//	k := once.New(store, once.WithObserver(onceslog.Observer(slog.Default(), nil)))
//
// Keys are not logged in clear by default: idempotency keys can be
// guessable (order numbers) or carry personal data, and a log line is read by
// more people than the store is. Each key is logged as key_hash, the first
// 16 hex digits of its SHA-256, which is enough to correlate the lines of one
// key. Set Config.ClearKeys to log keys as they are.
package onceslog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"

	"github.com/stagedoor/once"
)

// Config configures the observer. A nil *Config means defaults.
type Config struct {
	// ClearKeys logs keys in clear (attribute "key") instead of their hash
	// (attribute "key_hash"). Defaults to false.
	ClearKeys bool
	// Level maps an event kind to the level it is logged at. Defaults to
	// DefaultLevel.
	Level func(once.EventKind) slog.Level
}

// DefaultLevel logs the steps of a healthy call (claimed, executed,
// recorded, replayed, renewed) at Debug; duplicates and releases (in
// progress, key reused, released, held) at Info; and what an operator must
// look at (lease lost, unrecorded, store error) at Warn.
func DefaultLevel(k once.EventKind) slog.Level {
	switch k {
	case once.EventInProgress, once.EventKeyReused, once.EventReleased, once.EventHeld:
		return slog.LevelInfo
	case once.EventLeaseLost, once.EventUnrecorded, once.EventStoreError:
		return slog.LevelWarn
	default:
		return slog.LevelDebug
	}
}

// Observer returns a once.Observer that logs every event to logger as one
// line with the message "once <event>" and the attributes scope, key_hash
// (or key), and, when the event sets them: op, store_time, fn_time, class,
// took_over, fn_error (fn's error, or the replayed final error) and error
// (a failure of the store or of the claim, never fn's).
func Observer(logger *slog.Logger, cfg *Config) once.Observer {
	var c Config
	if cfg != nil {
		c = *cfg
	}
	if c.Level == nil {
		c.Level = DefaultLevel
	}
	return func(ctx context.Context, e once.Event) {
		level := c.Level(e.Kind)
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
		if e.Op != "" {
			attrs = append(attrs, slog.String("op", e.Op))
		}
		if e.StoreTime > 0 {
			attrs = append(attrs, slog.Duration("store_time", e.StoreTime))
		}
		if e.FnTime > 0 {
			attrs = append(attrs, slog.Duration("fn_time", e.FnTime))
		}
		if e.FnErr != nil && (e.Kind == once.EventExecuted || e.Kind == once.EventHeld) {
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

// KeyHash returns the first 16 hex digits of the SHA-256 of key: the form
// in which keys are logged by default.
func KeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:8])
}
