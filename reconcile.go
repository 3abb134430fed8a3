package once

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stagedoor/once/backends"
)

// Defaults of a Reconciler.
const (
	DefaultReconcileLease = 30 * time.Second
	DefaultReconcileBatch = 100
)

// HeldKey is a held key as a Reconciler shows it to its ReconcileFunc.
type HeldKey struct {
	Scope string
	Key   string
	// Age is how long the key has been held.
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
// the key does. An error leaves the key held and is counted in the report.
type ReconcileFunc[T any] func(ctx context.Context, k HeldKey) (Verdict[T], error)

// ReconcilerConfig configures a Reconciler. The zero value means defaults.
type ReconcilerConfig struct {
	// OlderThan selects keys held at least this long (default: all).
	OlderThan time.Duration
	// Scope, when not empty, reconciles that scope alone.
	Scope string
	// Lease is how long a Reconciler has a key to itself while it asks;
	// default DefaultReconcileLease. A ReconcileFunc that runs longer is
	// cancelled; another instance may then take the key, and the slow
	// one's Resolve is refused.
	Lease time.Duration
	// Batch bounds the keys one Pass examines; default
	// DefaultReconcileBatch.
	Batch int
	// Codec encodes a settled verdict's Value; nil means the Keeper's
	// codec (WithCodec). It must be the codec the keys' callers decode
	// with: oncehttp.NewReconciler sets the middleware's.
	Codec Codec
}

// ReconcileReport counts what one Pass did.
type ReconcileReport struct {
	// Examined is the held keys the pass listed.
	Examined int
	// Resolved is the keys this pass resolved.
	Resolved int
	// LeftHeld is the keys whose verdict was not settled, or whose
	// ReconcileFunc failed (Failed of them).
	LeftHeld, Failed int
	// Busy is the keys another Reconciler had leased, or that were
	// settled by someone else meanwhile.
	Busy int
	// Errors holds the first few ReconcileFunc errors.
	Errors []error
	// Done reports that the pass reached the end of the held keys; the
	// next Pass starts over.
	Done bool
}

// Reconciler settles held keys (see Hold) by asking the downstream
// service what happened. Several Reconcilers may run at once, in one
// process or many, over the same store: each key is leased by one of them
// at a time (backends.Store.LeaseHeld), and only the holder of the live
// lease can resolve it, so a key is resolved once, and never over a
// completion. A Reconciler is not safe for concurrent Pass calls; run one
// per goroutine.
type Reconciler[T any] struct {
	keeper *Keeper
	lister backends.Lister
	check  ReconcileFunc[T]
	cfg    ReconcilerConfig
	cursor string
}

// NewReconciler returns a Reconciler of k's held keys; outcomes are
// encoded with cfg.Codec (k's codec by default) and stored with k's
// retention. k's store must
// implement backends.Lister, and k's options be valid (as Do requires:
// a positive retention, for one); NewReconciler returns an
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
	if err := k.cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultReconcileLease
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultReconcileBatch
	}
	cfg.Batch = min(cfg.Batch, backends.MaxListLimit)
	return &Reconciler[T]{keeper: k, lister: lister, check: check, cfg: cfg}, nil
}

// maxReportedErrors bounds ReconcileReport.Errors.
const maxReportedErrors = 8

// Pass examines at most Batch held keys, resuming where the previous
// Pass stopped, and settles those whose ReconcileFunc returns a settled
// verdict. It returns an error only when the store fails; the report
// says what was done until then.
func (r *Reconciler[T]) Pass(ctx context.Context) (ReconcileReport, error) {
	var rep ReconcileReport
	for rep.Examined < r.cfg.Batch {
		page, err := r.lister.List(ctx, backends.ListParams{
			State: backends.StateHeld, OlderThan: r.cfg.OlderThan, Scope: r.cfg.Scope,
			Cursor: r.cursor, Limit: r.cfg.Batch - rep.Examined,
		})
		if err != nil {
			return rep, &StoreError{Op: "list", Err: err}
		}
		for _, l := range page.Records {
			rep.Examined++
			if err := r.settle(ctx, l, &rep); err != nil {
				return rep, err
			}
		}
		r.cursor = page.Next
		if page.Next == "" {
			rep.Done = true
			return rep, nil
		}
	}
	return rep, nil
}

// settle leases one held key, asks, and resolves it.
func (r *Reconciler[T]) settle(ctx context.Context, l backends.Listed, rep *ReconcileReport) error {
	token := newToken()
	leased, err := r.keeper.store.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: l.Scope, Key: l.Key, Owner: token, Lease: r.cfg.Lease})
	if err != nil {
		return &StoreError{Op: "leaseheld", Err: err}
	}
	if !leased.Leased {
		rep.Busy++
		return nil
	}
	// The check ends well before the lease, so that the Resolve below is
	// made while the lease is still ours.
	checkCtx, cancel := context.WithTimeout(ctx, r.cfg.Lease-r.cfg.Lease/4) // 3/4 of it, without overflow
	v, err := r.ask(checkCtx, HeldKey{Scope: l.Scope, Key: l.Key, Age: l.Record.Age, Code: l.Record.Held.Code, Message: l.Record.Held.Message})
	cancel()
	cfg := &r.keeper.cfg
	if err == nil && !v.Settled {
		rep.LeftHeld++
		cfg.emit(ctx, Event{Kind: EventReconciled, Scope: l.Scope, Key: l.Key})
		return r.unlease(ctx, l, token)
	}
	var data []byte
	var stored error // the final error stored, without its class marker
	if err == nil {
		codec := r.cfg.Codec
		if codec == nil {
			codec = cfg.codec
		}
		data, stored, err = encodeResolution(cfg, codec, v.Value, v.Err)
	}
	if err != nil {
		rep.LeftHeld++
		rep.Failed++
		if len(rep.Errors) < maxReportedErrors {
			rep.Errors = append(rep.Errors, fmt.Errorf("%s/%s: %w", l.Scope, l.Key, err))
		}
		cfg.emit(ctx, Event{Kind: EventReconciled, Scope: l.Scope, Key: l.Key, Err: err})
		return r.unlease(ctx, l, token)
	}
	start := cfg.clock()
	res, err := r.keeper.store.Resolve(ctx, backends.ResolveParams{
		Scope: l.Scope, Key: l.Key, Owner: token, Outcome: data, Retention: cfg.retention,
	})
	if err != nil {
		cfg.emit(ctx, Event{Kind: EventStoreError, Scope: l.Scope, Key: l.Key, Op: "resolve", StoreTime: cfg.since(start), Err: err})
		return &StoreError{Op: "resolve", Err: err}
	}
	if res.Resolved {
		rep.Resolved++
		cfg.emit(ctx, Event{Kind: EventResolved, Scope: l.Scope, Key: l.Key, Op: "resolve", StoreTime: cfg.since(start), FnErr: stored})
	} else {
		rep.Busy++ // our lease lapsed and someone else settled or leased it
	}
	return nil
}

// unlease ends our lease on a key left held at once (a lease of the
// shortest duration), so that the next pass, of any Reconciler, asks
// again.
func (r *Reconciler[T]) unlease(ctx context.Context, l backends.Listed, token string) error {
	_, err := r.keeper.store.LeaseHeld(ctx, backends.LeaseHeldParams{Scope: l.Scope, Key: l.Key, Owner: token, Lease: 1})
	if err != nil {
		return &StoreError{Op: "leaseheld", Err: err}
	}
	return nil
}

// ask calls the ReconcileFunc, turning a panic into an error: one bad key
// never stops a pass.
func (r *Reconciler[T]) ask(ctx context.Context, k HeldKey) (v Verdict[T], err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("once: the ReconcileFunc panicked: %v", p)
		}
	}()
	return r.check(ctx, k)
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
// or the first store error. A pass that did not reach the end of the
// held keys is followed at once by the next.
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
