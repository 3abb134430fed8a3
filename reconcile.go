package once

import (
	"context"
	"errors"
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
	// MaxReconcileLease is the longest ReconcilerConfig.Lease; a longer
	// one means MaxReconcileLease. A Reconciler that crashes (or stops
	// without ending its lease) while it asks about a key leaves the key
	// leased, free for no other Reconciler and for no Resolve, until the
	// lease ends: at most this long.
	MaxReconcileLease = time.Hour
)

// ErrLateVerdict is reported (in ReconcileReport.Errors, the key counted
// Failed and left held) for a settled verdict that its ReconcileFunc
// returned after its context's deadline, three quarters of the
// Reconciler's lease: by then the lease may be over and the key another
// intent's, so the verdict is dropped and a later pass asks again.
var ErrLateVerdict = errors.New("once: reconciler: the verdict came after its lookup's deadline; the key stays held")

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
	// false the key stays held, for a later pass. An Err that its marks
	// make held or retryable (by the rule Do classifies with: see
	// Classifier) is no answer: the key stays held and is counted Failed,
	// with an *InvalidInputError (Field "err") in the report's Errors. An
	// Err with no mark is final.
	Settled bool
	Value   T
	Err     error
}

// ReconcileFunc asks the downstream service what happened to a held key
// — with the same DerivedKey fn sent, so the service can tell — and
// returns the verdict. Its context ends before the Reconciler's lease on
// the key does; a verdict returned after its context's deadline is not
// stored (ErrLateVerdict). An error leaves the key held and is counted in
// the report; so does a panic, which the Reconciler recovers.
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
	// after three quarters of it, and a verdict it returns after that is
	// not stored (the key stays held: see ErrLateVerdict); another
	// instance may take the key once the lease ends, and the slow one's
	// Resolve is then refused (it is fenced by the lease: see
	// backends.ResolveParams). A Lease below MinReconcileLease, negative
	// included, is refused by NewReconciler; one above MaxReconcileLease,
	// up to math.MaxInt64, means MaxReconcileLease.
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
	// MaxOutcomeSize caps the encoded outcome of a settled verdict, as
	// WithMaxOutcomeSize caps Do's; 0 means the Keeper's. A verdict over
	// it is not stored: the key stays held and the pass counts it as
	// Failed (an *OutcomeTooLargeError). It must be at least the cap the
	// keys' callers store with, or a verdict they could have stored
	// leaves the key held: oncehttp.NewReconciler sets it so. A negative
	// one is refused by NewReconciler.
	MaxOutcomeSize int
}

// Reconciler settles held keys (see Hold) by asking the downstream
// service what happened. Several Reconcilers may run at once, in one
// process or many, over the same store: each key is leased by one of them
// at a time (backends.Store.LeaseHeld), and only the holder of the
// lease can resolve it (its Resolve is fenced by the lease:
// backends.ResolveParams.OnlyLeased), so a key is resolved once, never
// over a completion, and never once the key is no longer the held record
// it leased: a verdict does not land on a key that expired or was deleted
// meanwhile (the next intent's), nor over a takeover's claim. A Reconciler is not safe for concurrent Pass calls; run one
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
	// page was listed from pageCursor, seen is the keys of it examined
	// so far, and seenResolved how many of those this Reconciler resolved
	// (see relist).
	cursor       string
	rest         []backends.Listed
	last         bool
	pageCursor   string
	seen         []heldID
	seenResolved int
	// backoffs are the keys a store write failed for, skipped for a
	// while (see ReconcileReport.Skipped); now is their clock.
	backoffs backoffs
	now      func() time.Time
}

// NewReconciler returns a Reconciler of k's held keys; outcomes are
// encoded with cfg.Codec (k's codec by default), capped at
// cfg.MaxOutcomeSize (k's cap by default) and stored with k's retention.
// k's store must implement backends.Lister (itself or a store it
// decorates: see backends.As), k's options be valid as Do requires them
// (a positive retention, for one: NewReconciler refuses whatever every
// Do of k would), and cfg valid (see ReconcilerConfig); NewReconciler
// returns an *InvalidInputError otherwise.
func NewReconciler[T any](k *Keeper, check ReconcileFunc[T], cfg ReconcilerConfig) (*Reconciler[T], error) {
	if k == nil {
		return nil, &InvalidInputError{Field: "keeper", Reason: "nil"}
	}
	if check == nil {
		return nil, &InvalidInputError{Field: "check", Reason: "nil"}
	}
	lister, ok := backends.As[backends.Lister](k.store)
	if !ok {
		return nil, &InvalidInputError{Field: "store", Reason: "does not implement backends.Lister"}
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
	cfg.Lease = min(cfg.Lease, MaxReconcileLease)
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultReconcileBatch
	}
	cfg.Batch = min(cfg.Batch, backends.MaxListLimit)
	if cfg.MaxOutcomeSize > 0 {
		own := *k // the Keeper's policy, with the verdicts' cap
		own.cfg.maxOutcome = cfg.MaxOutcomeSize
		k = &own
	}
	return &Reconciler[T]{keeper: k, lister: lister, check: check, cfg: cfg, backoffs: backoffs{}, now: time.Now}, nil
}

// Run calls Pass every interval until ctx ends, and returns ctx's error
// or the first store error (a *StoreError): it does not retry, so that a
// store that is down is seen by the caller, who decides when to try
// again. A pass that did not reach the end of the held keys is followed
// at once by the next. Calling Run (or Pass) again after a store error
// goes on where it stopped, after the key that failed, which is backed
// off and free for other Reconcilers (see Pass). A nil ctx is refused at
// once with an *InvalidInputError (Field "ctx"), as Pass refuses it.
func (r *Reconciler[T]) Run(ctx context.Context, interval time.Duration) error {
	if err := validateContext(ctx); err != nil {
		return err
	}
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
