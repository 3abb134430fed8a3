package reconcile

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// settle settles one held key (see attempt) unless it is in backoff, and
// keeps the backoff up to date: a store error backs the key off (unless
// ctx ended) and remembers its lease's owner; when ctx ended, the owner is
// still remembered, with no backoff, if the lease may still be ours (so
// that the next attempt takes it back). A success forgets the key. A store
// panic escapes settle after the key is remembered (backed off, its lease
// possibly ours) without a store call.
func (r *Job[T]) settle(ctx context.Context, l backends.Listed, rep *Report) error {
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
func (r *Job[T]) remember(ctx context.Context, id heldID, token string, live, delay bool, rep *Report) {
	gone, e, end := r.backoffs.failed(id, token, r.now(), live, delay)
	if end {
		kr := keyReport{rep: rep, l: backends.Listed{Scope: gone.scope, Key: gone.key}}
		r.endLease(ctx, kr.l, e.token, &kr)
	}
}

// attempt leases one held key for token, asks, and resolves it. A panic in
// the user code it runs is recovered and reported in rep (see Report's
// Panicked); it returns an error only when the store fails, and then has
// tried to end the lease (see Pass). It sets *live, when it returns or the
// store panics, to whether the lease may still be ours (see backoff.live).
func (r *Job[T]) attempt(ctx context.Context, l backends.Listed, token string, rep *Report, live *bool) error {
	kr := keyReport{rep: rep, l: l}
	*live = true // from the LeaseHeld on, until the lease is known to be over
	leased, err := r.store.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: l.Scope, Key: l.Key, Owner: token, Lease: r.cfg.Lease})
	if err != nil {
		// It may have been taken, its reply lost; it may even be taken
		// after the lease is ended (a LeaseHeld that ctx cut off in
		// flight), so it stays live.
		r.endLease(ctx, l, token, &kr)
		return &once.StoreError{Op: "leaseheld", Err: err}
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
	if err == nil && v.Settled {
		return r.storeVerdict(ctx, l, token, v, &kr, live)
	}
	return r.leaveHeld(ctx, l, token, err, panicked, &kr, live)
}

// leaveHeld ends our lease on a key whose verdict is not stored: not
// settled (err nil), or failed with err (panicked when err is a panic this
// Job recovered). It then reports the key and emits an EventReconciled.
func (r *Job[T]) leaveHeld(ctx context.Context, l backends.Listed, token string, err error, panicked bool, kr *keyReport, live *bool) error {
	kr.rep.LeftHeld++
	uErr := r.unlease(ctx, l, token) // before the event: a panicking observer cannot keep the key leased
	*live = uErr != nil
	if err != nil {
		kr.rep.Failed++
		kr.fail(err, panicked)
	}
	kr.emit(ctx, r.keeper, once.Event{Kind: once.EventReconciled, Scope: l.Scope, Key: l.Key, Err: err})
	return uErr
}

// storeVerdict stores a settled verdict with once.Resolve, on a store whose
// Resolve is fenced by our lease (token), and reports it in kr. It returns
// an error only when the store fails, after trying to end the lease; it
// sets *live as attempt does. A verdict that does not encode, or is no
// answer, is left held (see leaveHeld).
//
// The verdict is what the downstream service said: it is stored even when
// ctx ended meanwhile (Run stopping), on a write detached from ctx's
// cancellation and bounded, rather than dropped for the next walk to ask
// again.
func (r *Job[T]) storeVerdict(ctx context.Context, l backends.Listed, token string, v Verdict[T], kr *keyReport, live *bool) error {
	f := &fenced{Store: r.store, owner: token}
	scope := r.keeper.WithStore(f).Scope(l.Scope).With(r.opts...)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	err, panicked := resolve(wctx, scope, l, v, f)
	cancel()
	if !f.called { // refused before any store call: it did not encode, or is no answer
		return r.leaveHeld(ctx, l, token, err, panicked, kr, live)
	}
	if f.err != nil {
		*live = !r.endLease(ctx, l, token, kr)
		if panicked { // an observer of the EventStoreError
			kr.fail(err, true)
		}
		return &once.StoreError{Op: "resolve", Err: f.err}
	}
	*live = false // resolved, or our lease lapsed
	if panicked { // an observer of the EventResolved
		kr.fail(err, true)
	}
	if f.res.Resolved {
		kr.rep.Resolved++
		return nil
	}
	// Our lease lapsed and someone else settled, leased or took the key,
	// or it expired or was deleted; or it is held for another intent (a
	// fingerprint other than the listed one), which our LeaseHeld may
	// have leased: end a live lease on it, which may be ours (it writes
	// nothing under another's).
	kr.rep.Busy++
	if f.res.Existing.State == backends.StateHeld && f.res.Existing.LeaseRemaining > 0 {
		*live = !r.endLease(ctx, l, token, kr)
	}
	return nil
}

// resolve stores v with once.Resolve on scope, whose store is f, with the
// listed record's fingerprint: the verdict is that intent's answer, never
// another's. A panic in the user code Resolve runs is recovered and
// returned as a *PanicError (panicked): in the codec or the value's or
// error's methods ("encode", before the store call), or in an observer
// ("observer", after it). A panic in the store is not recovered.
func resolve[T any](ctx context.Context, scope once.Scope, l backends.Listed, v Verdict[T], f *fenced) (err error, panicked bool) {
	defer func() {
		if p := recover(); p != nil {
			if f.called && !f.returned {
				panic(p)
			}
			hook := "encode"
			if f.returned {
				hook = "observer"
			}
			err, panicked = newPanic(hook, p), true
		}
	}()
	return once.Resolve(ctx, scope, l.Key, once.Fingerprint(l.Record.Fingerprint), v.Value, v.Err), false
}

// fenced is a Job's store for one verdict: its Resolve is fenced by the
// Job's lease on the key (owner, OnlyLeased), and records what the store
// answered, which once.Resolve turns into errors.
type fenced struct {
	backends.Store
	owner            string
	called, returned bool
	res              backends.ResolveResult
	err              error
}

func (f *fenced) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	p.Owner, p.OnlyLeased = f.owner, true
	f.called = true
	f.res, f.err = f.Store.Resolve(ctx, p)
	f.returned = true
	return f.res, f.err
}

// writeTimeout bounds a write detached from the pass's cancellation, as
// once.Do bounds its completion.
const writeTimeout = 5 * time.Second

// unlease ends our lease on a key left held at once, with a LeaseHeld of
// the shortest lease (1 ns), so that the next pass, of any Job, asks
// again. It writes with ctx detached from its cancellation, for at most
// writeTimeout: a Pass whose context ends while it asks (Run stopping)
// still ends the lease, which may be as long as math.MaxInt64. When
// another Job has a live lease on the key, or the key is no longer held
// (it was settled), it writes nothing. When no live lease is on the key —
// ours lapsed and nobody took it, or the LeaseHeld that was to take it
// never reached the store — it does write: it leases the key to token for
// that shortest lease, which makes token the record's owner (see
// backends.Store.LeaseHeld) and ends at once (Redis rounds it up to 1 ms),
// so the key is free either way.
func (r *Job[T]) unlease(ctx context.Context, l backends.Listed, token string) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer cancel()
	_, err := r.store.LeaseHeld(wctx, backends.LeaseHeldParams{Scope: l.Scope, Key: l.Key, Owner: token, Lease: 1})
	if err != nil {
		return &once.StoreError{Op: "leaseheld", Err: err}
	}
	return nil
}

// endLease ends our lease after a store error on the key, best effort:
// its failure is reported in the key's report, not returned, so that the
// caller returns the first error. It reports whether it ended the lease.
func (r *Job[T]) endLease(ctx context.Context, l backends.Listed, token string, kr *keyReport) bool {
	if err := r.unlease(ctx, l, token); err != nil {
		kr.fail(err, false)
		return false
	}
	return true
}

// ask calls the Check, turning a panic into a *PanicError (and
// panicked): one bad key never stops a pass.
func (r *Job[T]) ask(ctx context.Context, k HeldKey) (v Verdict[T], panicked bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			v, panicked, err = Verdict[T]{}, true, newPanic("check", p)
		}
	}()
	v, err = r.check(ctx, k)
	return v, false, err
}

// newToken returns a fresh lease owner: 128 random bits in 22 characters of
// unpadded base64url, the form of the core's owner tokens.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return base64.RawURLEncoding.EncodeToString(b[:])
}
