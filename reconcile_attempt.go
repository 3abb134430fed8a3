package once

import (
	"context"
	"time"

	"github.com/stagedoor/once/backends"
)

// settle settles one held key (see attempt) unless it is in backoff, and
// keeps the backoff up to date: a store error backs the key off (unless
// ctx ended) and remembers its lease's owner; when ctx ended, the owner is
// still remembered, with no backoff, if the lease may still be ours (so
// that the next attempt takes it back). A success forgets the key. A store
// panic escapes settle after the key is remembered (backed off, its lease
// possibly ours) without a store call.
func (r *Reconciler[T]) settle(ctx context.Context, l backends.Listed, rep *ReconcileReport) error {
	id := heldID{scope: l.Scope, key: l.Key}
	b, found := r.backoffs[id]
	if found && r.now().Before(b.until) {
		rep.Skipped++
		return nil
	}
	token := b.token
	if !found {
		token = newToken()
	}
	live, returned := false, false
	defer func() {
		if !returned { // a store panic (attempt recovers user code's): remember, without a store call
			r.backoffs.failed(id, token, r.now(), true, true)
		}
	}()
	err := r.attempt(ctx, l, token, rep, &live)
	returned = true
	switch {
	case err == nil:
		delete(r.backoffs, id)
	case ctx.Err() == nil:
		r.remember(ctx, id, token, live, true, rep)
	case live || found:
		r.remember(ctx, id, token, live, false, rep)
	}
	return err
}

// remember records a store failure of id (see backoffs.failed). When the
// entry forgotten to make room for it may hold a lease of ours, that lease
// is ended first (best effort: a failure is reported in rep's Errors).
func (r *Reconciler[T]) remember(ctx context.Context, id heldID, token string, live, delay bool, rep *ReconcileReport) {
	gone, e, end := r.backoffs.failed(id, token, r.now(), live, delay)
	if end {
		kr := keyReport{rep: rep, l: backends.Listed{Scope: gone.scope, Key: gone.key}}
		r.endLease(ctx, kr.l, e.token, &kr)
	}
}

// attempt leases one held key for token, asks, and resolves it. A panic in
// the user code it runs is recovered and reported in rep (see
// ReconcileReport's Panicked); it returns an error only when the store
// fails, and then has tried to end the lease (see Pass). It sets *live,
// when it returns or the store panics, to whether the lease may still be
// ours (see backoff.live).
func (r *Reconciler[T]) attempt(ctx context.Context, l backends.Listed, token string, rep *ReconcileReport, live *bool) error {
	kr := keyReport{rep: rep, l: l}
	*live = true // from the LeaseHeld on, until the lease is known to be over
	leased, err := r.keeper.store.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: l.Scope, Key: l.Key, Owner: token, Lease: r.cfg.Lease})
	if err != nil {
		// It may have been taken, its reply lost; it may even be taken
		// after the lease is ended (a LeaseHeld that ctx cut off in
		// flight), so it stays live.
		r.endLease(ctx, l, token, &kr)
		return &StoreError{Op: "leaseheld", Err: err}
	}
	if !leased.Leased {
		*live = false
		rep.Busy++
		return nil
	}
	// The check ends well before the lease, so that storeVerdict's Resolve
	// is made while the lease is still ours; a verdict that comes after
	// the check's deadline (a lookup that ignores its context) is not
	// stored: the lease may be over, and the key another intent's.
	deadline := time.Now().Add(r.cfg.Lease - r.cfg.Lease/4) // 3/4 of it, without overflow
	checkCtx, cancel := context.WithDeadline(ctx, deadline)
	v, panicked, err := r.ask(checkCtx, HeldKey{Scope: l.Scope, Key: l.Key, Age: l.Record.Age, Code: l.Record.Held.Code, Message: l.Record.Held.Message})
	cancel()
	if err == nil && v.Settled && !time.Now().Before(deadline) {
		err = ErrLateVerdict
	}
	cfg := &r.keeper.cfg
	if err == nil && !v.Settled {
		rep.LeftHeld++
		uErr := r.unlease(ctx, l, token) // before the event: a panicking observer cannot keep the key leased
		*live = uErr != nil
		kr.emit(ctx, cfg, Event{Kind: EventReconciled, Scope: l.Scope, Key: l.Key})
		return uErr
	}
	var data []byte
	var stored error // the final error stored, without its class marker
	if err == nil {
		codec := r.cfg.Codec
		if codec == nil {
			codec = cfg.codec
		}
		data, stored, panicked, err = encodeVerdict(cfg, codec, v)
	}
	if err != nil {
		rep.LeftHeld++
		rep.Failed++
		uErr := r.unlease(ctx, l, token) // before fail and the event, as above
		*live = uErr != nil
		kr.fail(err, panicked)
		kr.emit(ctx, cfg, Event{Kind: EventReconciled, Scope: l.Scope, Key: l.Key, Err: err})
		return uErr
	}
	return r.storeVerdict(ctx, l, token, data, stored, &kr, live)
}

// storeVerdict stores data, the encoded outcome of a settled verdict
// (stored is its final error without its class marker), with a Resolve
// under our lease (token), and reports it in kr. It returns an error only
// when the store fails, after trying to end the lease; it sets *live as
// attempt does.
//
// The verdict is what the downstream service said: it is stored even when
// ctx ended meanwhile (Run stopping), on a write detached from ctx's
// cancellation and bounded as Do's completion is, rather than dropped for
// the next walk to ask again.
func (r *Reconciler[T]) storeVerdict(ctx context.Context, l backends.Listed, token string, data []byte, stored error, kr *keyReport, live *bool) error {
	cfg := &r.keeper.cfg
	start := cfg.clock()
	wctx := newWriteContext(context.WithoutCancel(ctx), writeTimeout)
	res, err := r.keeper.store.Resolve(wctx, backends.ResolveParams{
		// Fenced by our lease (OnlyLeased), with the listed record's
		// fingerprint: the verdict is that intent's answer, never
		// another's (a key that expired, or was deleted and claimed
		// again), and never lands over a takeover's claim.
		Scope: l.Scope, Key: l.Key, Fingerprint: l.Record.Fingerprint, Owner: token, Outcome: data, Retention: cfg.retention,
		OnlyLeased: true,
	})
	wctx.end()
	if err != nil {
		took := cfg.since(start)
		*live = !r.endLease(ctx, l, token, kr) // before the event: a panicking observer cannot keep the key leased
		kr.emit(ctx, cfg, Event{Kind: EventStoreError, Scope: l.Scope, Key: l.Key, Op: "resolve", StoreTime: took, Err: err})
		return &StoreError{Op: "resolve", Err: err}
	}
	*live = false // resolved, or our lease lapsed
	if res.Resolved {
		kr.rep.Resolved++
		kr.emit(ctx, cfg, Event{Kind: EventResolved, Scope: l.Scope, Key: l.Key, Op: "resolve", StoreTime: cfg.since(start), FnErr: stored})
		return nil
	}
	// Our lease lapsed and someone else settled, leased or took the key,
	// or it expired or was deleted; or it is held for another intent (a
	// fingerprint other than the listed one), which our LeaseHeld may
	// have leased: end a live lease on it, which may be ours (it writes
	// nothing under another's).
	kr.rep.Busy++
	if res.Existing.State == backends.StateHeld && res.Existing.LeaseRemaining > 0 {
		*live = !r.endLease(ctx, l, token, kr)
	}
	return nil
}

// unlease ends our lease on a key left held at once, with a LeaseHeld of
// the shortest lease (1 ns), so that the next pass, of any Reconciler,
// asks again. It writes with ctx detached from its cancellation, for at
// most writeTimeout: a Pass whose context ends while it asks (Run
// stopping) still ends the lease, which may be as long as math.MaxInt64.
// When another Reconciler has a live lease on the key, or the key is no
// longer held (it was settled), it writes nothing. When no live lease is
// on the key — ours lapsed and nobody took it, or the LeaseHeld that was
// to take it never reached the store — it does write: it leases the key
// to token for that shortest lease, which makes token the record's owner
// (see backends.Store.LeaseHeld) and ends at once (Redis rounds it up to
// 1 ms), so the key is free either way.
func (r *Reconciler[T]) unlease(ctx context.Context, l backends.Listed, token string) error {
	wctx := newWriteContext(context.WithoutCancel(ctx), writeTimeout)
	defer wctx.end()
	_, err := r.keeper.store.LeaseHeld(wctx, backends.LeaseHeldParams{Scope: l.Scope, Key: l.Key, Owner: token, Lease: 1})
	if err != nil {
		return &StoreError{Op: "leaseheld", Err: err}
	}
	return nil
}

// endLease ends our lease after a store error on the key, best effort:
// its failure is reported in the key's report, not returned, so that the
// caller returns the first error. It reports whether it ended the lease.
func (r *Reconciler[T]) endLease(ctx context.Context, l backends.Listed, token string, kr *keyReport) bool {
	if err := r.unlease(ctx, l, token); err != nil {
		kr.fail(err, false)
		return false
	}
	return true
}

// ask calls the ReconcileFunc, turning a panic into a
// *ReconcilePanicError (and panicked): one bad key never stops a pass.
func (r *Reconciler[T]) ask(ctx context.Context, k HeldKey) (v Verdict[T], panicked bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, panicked, err = Verdict[T]{}, true, newReconcilePanic("check", p)
		}
	}()
	v, err = r.check(ctx, k)
	return v, false, err
}

// encodeVerdict encodes a settled verdict as encodeResolution does,
// turning a panic (in codec, or in the value's or the error's methods)
// into a *ReconcilePanicError (and panicked): nothing is stored then.
func encodeVerdict[T any](cfg *config, codec Codec, v Verdict[T]) (data []byte, inner error, panicked bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, inner, panicked, err = nil, nil, true, newReconcilePanic("encode", p)
		}
	}()
	data, inner, err = encodeResolution(cfg, codec, v.Value, v.Err)
	return data, inner, false, err
}
