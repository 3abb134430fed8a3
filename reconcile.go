package once

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/stagedoor/once/backends"
)

// Defaults of a Reconciler.
const (
	DefaultReconcileLease = 30 * time.Second
	DefaultReconcileBatch = 100
	// MinReconcileLease is the shortest ReconcilerConfig.Lease: the lease
	// must cover a call to the downstream service and then the store's
	// Resolve, and be a duration every store represents (Redis counts in
	// milliseconds). Below it every check would time out, or every
	// verdict reach the store after the lease, and no key be resolved.
	MinReconcileLease = time.Second
)

// HeldKey is a held key as a Reconciler shows it to its ReconcileFunc.
type HeldKey struct {
	Scope string
	Key   string
	// Age is how long the key had been held when this Pass listed it.
	Age time.Duration
	// Code and Message are the held error's, as the owner held it.
	Code, Message string
}

// Verdict is what a ReconcileFunc learnt about a held key.
type Verdict[T any] struct {
	// Settled reports that the downstream service answered: the key is
	// resolved with Value (Err nil) or with Err as a final error. When
	// false the key stays held, for a later pass.
	Settled bool
	Value   T
	Err     error
}

// ReconcileFunc asks the downstream service what happened to a held key
// — with the same DerivedKey fn sent, so the service can tell — and
// returns the verdict. Its context ends before the Reconciler's lease on
// the key does. An error leaves the key held and is counted in the report;
// so does a panic, which the Reconciler recovers.
type ReconcileFunc[T any] func(ctx context.Context, k HeldKey) (Verdict[T], error)

// ReconcilerConfig configures a Reconciler. The zero value means defaults.
type ReconcilerConfig struct {
	// OlderThan selects keys held at least this long (default: all). A
	// negative one is refused by NewReconciler.
	OlderThan time.Duration
	// Scope, when not empty, reconciles that scope alone; it must be a
	// valid scope name (ValidateScope), or NewReconciler refuses it.
	Scope string
	// Lease is how long a Reconciler has a key to itself while it asks;
	// 0 means DefaultReconcileLease. The ReconcileFunc's context ends
	// after three quarters of it; another instance may take the key once
	// it ends, and the slow one's Resolve is then refused. A Lease below
	// MinReconcileLease, negative included, is refused by NewReconciler;
	// any longer one, up to math.MaxInt64, means that long (a store whose
	// range is smaller saturates at its maximum).
	Lease time.Duration
	// Batch bounds the keys one Pass examines; default
	// DefaultReconcileBatch, at most backends.MaxListLimit. A negative one
	// is refused by NewReconciler.
	Batch int
	// Codec encodes a settled verdict's Value; nil means the Keeper's
	// codec (WithCodec). It must be the codec the keys' callers decode
	// with: oncehttp.NewReconciler sets the middleware's. A panic in it is
	// recovered, as one in the ReconcileFunc is: the key stays held.
	Codec Codec
}

// ReconcileReport counts what one Pass did.
type ReconcileReport struct {
	// Examined is the held keys the pass listed.
	Examined int
	// Resolved is the keys this pass resolved.
	Resolved int
	// LeftHeld is the keys whose verdict was not settled, or that could
	// not be resolved (Failed of them): their ReconcileFunc returned an
	// error or panicked, or the verdict did not encode (the codec failed
	// or panicked, or the value or final error's methods panicked, or the
	// outcome is too large).
	LeftHeld, Failed int
	// Busy is the keys another Reconciler had leased, or that were
	// settled by someone else meanwhile.
	Busy int
	// Skipped is the keys this pass left alone, without a store call,
	// because a store write for them (LeaseHeld, Resolve, or the LeaseHeld
	// that ends a lease) failed, or the store panicked, recently in this
	// Reconciler: a key is skipped for ReconcileBackoffMin after such a
	// failure, twice as long after each further consecutive one, at most
	// ReconcileBackoffMax, and is forgotten once a store write for it
	// succeeds (or to make room: see MaxReconcileBackoffs and
	// MaxReconcileKeptLeases). A store error that comes with the end of
	// Pass's context starts no backoff, but the key's lease's owner is
	// still remembered when that lease may be ours (see Pass). A key in
	// backoff is free for other Reconcilers: its lease was ended (unless
	// that failed too, or the store panicked; see Pass).
	Skipped int
	// Panicked is the keys for which user code the Reconciler ran
	// panicked: the ReconcileFunc, the encoding of the verdict (see
	// Failed) or an observer. Each panic is recovered and reported in
	// Errors as a *ReconcilePanicError. A key whose ReconcileFunc or
	// encoding panicked is left held (and counted in Failed); an observer
	// panics after the store write its event reports, so the key is
	// counted by what was done (Resolved, LeftHeld) and that event is
	// dropped.
	Panicked int
	// Errors holds the first few errors of keys, each prefixed with its
	// scope and key: the ReconcileFunc's errors, encoding failures,
	// recovered panics, and the failure (a *StoreError) to end a key's
	// lease after the store error that Pass returns, or before the
	// Reconciler forgets it (see MaxReconcileKeptLeases).
	Errors []error
	// Done reports that the pass reached the end of the held keys (also
	// when a store error on the last of them ended it); the next Pass
	// starts over.
	Done bool
}

// Reconciler settles held keys (see Hold) by asking the downstream
// service what happened. Several Reconcilers may run at once, in one
// process or many, over the same store: each key is leased by one of them
// at a time (backends.Store.LeaseHeld), and only the holder of the live
// lease can resolve it, so a key is resolved once, and never over a
// completion. A Reconciler is not safe for concurrent Pass calls; run one
// per goroutine.
//
// A panic in the user code a Reconciler runs for a key (the
// ReconcileFunc, the codec, a verdict's value or final error's methods,
// an observer) never escapes Pass or Run: it is recovered, the key is
// left held (or resolved, when only an observer of the resolution
// panicked), and the pass goes on with the next key.
//
// A panic in the store is not recovered: it escapes Pass (and Run) with
// its value. The Reconciler makes no further store call for the key (a
// store that panicked may be in any state, a lock held), so a key the
// store leased to it before panicking stays leased until the lease ends,
// or until this Reconciler's next attempt at it: the key is backed off
// (see ReconcileReport.Skipped) with its lease's owner remembered, so that
// attempt takes the lease back. A later Pass resumes after that key.
type Reconciler[T any] struct {
	keeper *Keeper
	lister backends.Lister
	check  ReconcileFunc[T]
	cfg    ReconcilerConfig
	// cursor is where the next List starts; rest is what the last List
	// returned that no Pass examined yet (a store error or panic ended the
	// pass first, or a relist returned more than Batch keys), and last
	// whether that List's page ended the walk. That
	// page was listed from pageCursor, and seen is the keys of it examined
	// so far (see relist).
	cursor     string
	rest       []backends.Listed
	last       bool
	pageCursor string
	seen       []heldID
	// backoffs are the keys a store write failed for, skipped for a
	// while (see ReconcileReport.Skipped); now is their clock.
	backoffs backoffs
	now      func() time.Time
}

// NewReconciler returns a Reconciler of k's held keys; outcomes are
// encoded with cfg.Codec (k's codec by default) and stored with k's
// retention. k's store must
// implement backends.Lister, k's options be valid as Do requires them
// (a positive retention, for one, and a WithLocalCache config without a
// negative field: NewReconciler refuses whatever every Do of k would),
// and cfg valid (see ReconcilerConfig); NewReconciler returns an
// *InvalidInputError otherwise.
func NewReconciler[T any](k *Keeper, check ReconcileFunc[T], cfg ReconcilerConfig) (*Reconciler[T], error) {
	if k == nil {
		return nil, &InvalidInputError{Field: "keeper", Reason: "nil"}
	}
	if check == nil {
		return nil, &InvalidInputError{Field: "check", Reason: "nil"}
	}
	lister, ok := k.store.(backends.Lister)
	if !ok {
		return nil, &InvalidInputError{Field: "store", Reason: "does not implement backends.Lister"}
	}
	if err := k.cfg.validateLocalCache(); err != nil { // as Scope.validate does for Do
		return nil, err
	}
	if err := k.cfg.validate(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultReconcileLease
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultReconcileBatch
	}
	cfg.Batch = min(cfg.Batch, backends.MaxListLimit)
	return &Reconciler[T]{keeper: k, lister: lister, check: check, cfg: cfg, backoffs: backoffs{}, now: time.Now}, nil
}

// maxReportedErrors bounds ReconcileReport.Errors.
const maxReportedErrors = 8

// Pass examines at most Batch held keys, resuming where the previous
// Pass stopped, and settles those whose ReconcileFunc returns a settled
// verdict. It returns an error only when the store fails; the report
// says what was done until then. A settled verdict is stored even when
// ctx ends after the ReconcileFunc answered: the Resolve is detached from
// ctx's cancellation (and bounded, as Do's completion is).
//
// A store error on a key ends the pass, and leaves the key free. Every
// lease Pass takes is ended before Pass returns: after the verdict (see
// ReconcileReport.LeftHeld) or the resolution, and after a store error
// once its LeaseHeld was sent (when that LeaseHeld failed, the lease may
// have been taken, its reply lost) — with a write detached from ctx's
// cancellation, so that a pass stopped by its context does not strand
// the key for Lease either. Ending the lease after a store error is best
// effort: when it fails too (the store still down), that failure is added
// to the report's Errors and Pass returns the first error. A lease that
// could not be ended — or that may have been taken after it was ended (a
// LeaseHeld whose reply was lost, or that ctx cut off in flight) — lasts
// until Lease ends, or until this Reconciler's next attempt at the key,
// which reuses the lease's owner and so takes it back: the owner is
// remembered even when ctx ended (the key is then not backed off), and
// such a key is forgotten only past MaxReconcileKeptLeases of them.
//
// The next Pass resumes after the key whose store error (or panic) ended
// a pass, not at its page's start: it lists that page again (so that no
// key is asked with a stale record) and examines the keys of it that were
// not examined yet, those listed after the key first. So a key whose
// write keeps failing never blocks those after it, and the keys already
// asked in this walk are not asked again before the next walk.
// The key itself is backed off (see ReconcileReport.Skipped), so that it
// does not end every pass that reaches it.
func (r *Reconciler[T]) Pass(ctx context.Context) (ReconcileReport, error) {
	var rep ReconcileReport
	relisted := len(r.rest) > 0
	if relisted {
		if err := r.relist(ctx); err != nil {
			return rep, err
		}
	}
	for rep.Examined < r.cfg.Batch {
		if len(r.rest) == 0 && !relisted {
			page, err := r.list(ctx, r.cursor, r.cfg.Batch-rep.Examined)
			if err != nil {
				return rep, err
			}
			r.pageCursor, r.seen = r.cursor, r.seen[:0]
			r.rest, r.cursor, r.last = page.Records, page.Next, page.Next == ""
		}
		relisted = false
		for len(r.rest) > 0 && rep.Examined < r.cfg.Batch {
			l := r.rest[0]
			r.rest = r.rest[1:] // first: a pass that a store error or panic ends resumes after l
			r.seen = append(r.seen, heldID{scope: l.Scope, key: l.Key})
			rep.Examined++
			if err := r.settle(ctx, l, &rep); err != nil {
				rep.Done = len(r.rest) == 0 && r.last
				return rep, err
			}
		}
		if len(r.rest) == 0 && r.last {
			rep.Done = true
			return rep, nil
		}
	}
	return rep, nil
}

// list lists up to limit held keys from cursor.
func (r *Reconciler[T]) list(ctx context.Context, cursor string, limit int) (backends.ListPage, error) {
	page, err := r.lister.List(ctx, backends.ListParams{
		State: backends.StateHeld, OlderThan: r.cfg.OlderThan, Scope: r.cfg.Scope,
		Cursor: cursor, Limit: limit,
	})
	if err != nil {
		return page, &StoreError{Op: "list", Err: err}
	}
	return page, nil
}

// relist lists again the page whose rest an earlier Pass left (a store
// error or panic ended it), from that page's cursor, and keeps the keys
// not examined yet: so that they are asked as they are now, not as they
// were when the earlier Pass listed them (a key settled meanwhile, or
// deleted and held again by a new intent, perhaps too recently for
// OlderThan, is not asked with its old record), and the keys already
// examined are not asked again in this walk. On a store error the rest is
// kept, for the next Pass to list again.
func (r *Reconciler[T]) relist(ctx context.Context) error {
	page, err := r.list(ctx, r.pageCursor, min(len(r.seen)+r.cfg.Batch, backends.MaxListLimit))
	if err != nil {
		return err
	}
	seen := make(map[heldID]bool, len(r.seen))
	for _, id := range r.seen {
		seen[id] = true
	}
	rest := make([]backends.Listed, 0, len(page.Records))
	for _, l := range page.Records {
		if !seen[heldID{scope: l.Scope, key: l.Key}] {
			rest = append(rest, l)
		}
	}
	r.rest, r.cursor, r.last = rest, page.Next, page.Next == ""
	return nil
}

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
	// The check ends well before the lease, so that the Resolve below is
	// made while the lease is still ours.
	checkCtx, cancel := context.WithTimeout(ctx, r.cfg.Lease-r.cfg.Lease/4) // 3/4 of it, without overflow
	v, panicked, err := r.ask(checkCtx, HeldKey{Scope: l.Scope, Key: l.Key, Age: l.Record.Age, Code: l.Record.Held.Code, Message: l.Record.Held.Message})
	cancel()
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
	// The verdict is what the downstream service said: it is stored even
	// when ctx ended meanwhile (Run stopping), on a write detached from
	// ctx's cancellation and bounded as Do's completion is, rather than
	// dropped for the next walk to ask again.
	start := cfg.clock()
	wctx := newWriteContext(context.WithoutCancel(ctx), writeTimeout)
	res, err := r.keeper.store.Resolve(wctx, backends.ResolveParams{
		Scope: l.Scope, Key: l.Key, Owner: token, Outcome: data, Retention: cfg.retention,
	})
	wctx.end()
	if err != nil {
		took := cfg.since(start)
		*live = !r.endLease(ctx, l, token, &kr) // before the event, as above
		kr.emit(ctx, cfg, Event{Kind: EventStoreError, Scope: l.Scope, Key: l.Key, Op: "resolve", StoreTime: took, Err: err})
		return &StoreError{Op: "resolve", Err: err}
	}
	*live = false // resolved, or our lease lapsed
	if res.Resolved {
		rep.Resolved++
		kr.emit(ctx, cfg, Event{Kind: EventResolved, Scope: l.Scope, Key: l.Key, Op: "resolve", StoreTime: cfg.since(start), FnErr: stored})
	} else {
		rep.Busy++ // our lease lapsed and someone else settled or leased it
	}
	return nil
}

// keyReport reports what happened to one key in its pass's report.
type keyReport struct {
	rep      *ReconcileReport
	l        backends.Listed
	panicked bool
}

// fail reports err, a failure of the key, counting the key once in
// Panicked when err is a panic this Reconciler recovered (panicked). It
// runs none of err's methods but Error, which fmt recovers: err may be
// the ReconcileFunc's or the codec's, user code that runs outside the
// recovery of ask and encodeVerdict.
func (kr *keyReport) fail(err error, panicked bool) {
	if panicked && !kr.panicked {
		kr.panicked = true
		kr.rep.Panicked++
	}
	if len(kr.rep.Errors) < maxReportedErrors {
		kr.rep.Errors = append(kr.rep.Errors, fmt.Errorf("%s/%s: %w", kr.l.Scope, kr.l.Key, err))
	}
}

// emit reports e to cfg's observers, after the store write it reports. A
// panic in one is recovered and reported; the event is dropped.
func (kr *keyReport) emit(ctx context.Context, cfg *config, e Event) {
	defer func() {
		if p := recover(); p != nil {
			kr.fail(newReconcilePanic("observer", p), true)
		}
	}()
	cfg.emit(ctx, e)
}

// ReconcilePanicError reports a panic, recovered by a Reconciler, in the
// user code it ran for a key (see ReconcileReport.Panicked): the value it
// panicked with and the stack at the panic.
type ReconcilePanicError struct {
	// Hook is what panicked: "check" (the ReconcileFunc), "encode" (the
	// codec, or the settled value's or final error's methods, while the
	// verdict was encoded) or "observer".
	Hook  string
	Value any
	Stack []byte
}

func newReconcilePanic(hook string, p any) *ReconcilePanicError {
	return &ReconcilePanicError{Hook: hook, Value: p, Stack: debug.Stack()}
}

func (e *ReconcilePanicError) Error() string {
	what := e.Hook
	switch e.Hook {
	case "check":
		what = "the ReconcileFunc"
	case "encode":
		what = "encoding the verdict"
	}
	return fmt.Sprintf("once: reconciler: %s panicked: %v", what, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *ReconcilePanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
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

// encodeResolution encodes the outcome Resolve and a Reconciler store:
// the final error err (inner is err without its class marker, as stored)
// or, when err is nil, value with codec, within cfg's size limit.
func encodeResolution[T any](cfg *config, codec Codec, value T, err error) (data []byte, inner, encErr error) {
	if err != nil {
		_, inner = classify(err, nil)
		data = encodeError(cfg, inner)
	} else if data, encErr = encodeValue(codec, value); encErr != nil {
		return nil, nil, encErr
	}
	if len(data) > cfg.maxOutcome {
		return nil, nil, &OutcomeTooLargeError{Size: len(data), Limit: cfg.maxOutcome}
	}
	return data, inner, nil
}

// Run calls Pass every interval until ctx ends, and returns ctx's error
// or the first store error (a *StoreError): it does not retry, so that a
// store that is down is seen by the caller, who decides when to try
// again. A pass that did not reach the end of the held keys is followed
// at once by the next. Calling Run (or Pass) again after a store error
// goes on where it stopped, after the key that failed, which is backed
// off and free for other Reconcilers (see Pass).
func (r *Reconciler[T]) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(max(interval, time.Millisecond))
	defer t.Stop()
	for {
		rep, err := r.Pass(ctx)
		if err != nil && !errors.Is(err, ctx.Err()) {
			return err
		}
		if rep.Done {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
