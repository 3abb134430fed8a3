package oncehttp

import (
	"context"
	"sync/atomic"

	"github.com/stagedoor/once"
)

// storeChoice is a handler's override of Config.StoreStatus for the
// response it is writing.
type storeChoice int32

const (
	storeByStatus storeChoice = iota
	storeSkip
	storeForce
)

// guarded is what the middleware knows about the request being handled;
// it travels in the request's context.
type guarded struct {
	key, scope string
	problems   *problems
	tx         bool // the call runs in a transaction (HandlerTx)
	tookOver   atomic.Bool
	choice     atomic.Int32 // storeChoice
}

type guardedKey struct{}

func withGuarded(ctx context.Context, g *guarded) context.Context {
	return context.WithValue(ctx, guardedKey{}, g)
}

func guardedFrom(ctx context.Context) *guarded {
	if ctx == nil {
		return nil
	}
	g, _ := ctx.Value(guardedKey{}).(*guarded)
	return g
}

// tookOverObserver records a takeover of an expired claim in the request's
// guarded state, for FirstExecution.
func tookOverObserver(ctx context.Context, e once.Event) {
	if e.Kind != once.EventClaimed || !e.TookOver {
		return
	}
	if g := guardedFrom(ctx); g != nil {
		g.tookOver.Store(true)
	}
}

// Key returns the idempotency key of the guarded request whose context is
// ctx (the handler's r.Context()), and false outside a guarded request (an
// unguarded method, or a request let through by AllowMissingKey).
//
// Derive the keys of the handler's own downstream calls from it and the
// scope, never from the key alone: two callers may send the same key.
// once.DerivedKey("payrail", scope+"/"+key) is unique per caller when the
// scope cannot contain "/"; otherwise hash both (hashers.Strings).
func Key(ctx context.Context) (string, bool) {
	if g := guardedFrom(ctx); g != nil {
		return g.key, true
	}
	return "", false
}

// ScopeName returns the scope (the name Config.Scope returned) of the
// guarded request whose context is ctx, and false outside a guarded
// request.
func ScopeName(ctx context.Context) (string, bool) {
	if g := guardedFrom(ctx); g != nil {
		return g.scope, true
	}
	return "", false
}

// FirstExecution reports whether the handler runs for its key for the
// first time: false when it runs because it took over the expired claim of
// an earlier execution (a crashed process, a held 5xx whose lease ended),
// which may have done part of the work, so the handler should look for it
// (or rely on the idempotency of its downstream calls). A key freed by a
// released or unstored answer counts as new: nothing of the earlier run
// was meant to last. FirstExecution is false outside a guarded request.
func FirstExecution(ctx context.Context) bool {
	g := guardedFrom(ctx)
	return g != nil && !g.tookOver.Load()
}

// SkipStore marks the response the handler is writing as not stored,
// whatever its status: its client receives it, the key is released and the
// next request with the key runs the handler again. Use it for answers
// given before the endpoint did anything durable (a validation failure
// with a status that Config.StoreStatus stores, a refusal from a rate
// limiter), never after a side effect. It reports false, and does nothing,
// outside a guarded request. The last of SkipStore and ForceStore wins.
func SkipStore(ctx context.Context) bool {
	return setChoice(ctx, storeSkip)
}

// ForceStore marks the response the handler is writing as stored even if
// Config.StoreStatus would not store its status (a 422 returned after the
// endpoint acted). It cannot store a 5xx: those follow OnServerError. It
// reports false, and does nothing, outside a guarded request.
func ForceStore(ctx context.Context) bool {
	return setChoice(ctx, storeForce)
}

func setChoice(ctx context.Context, c storeChoice) bool {
	g := guardedFrom(ctx)
	if g == nil {
		return false
	}
	g.choice.Store(int32(c))
	return true
}
