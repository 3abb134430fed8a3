// Package reconcile settles held keys (see once.Hold) by asking the
// downstream service what became of each request, and storing the answer
// with once.Resolve, fenced by a lease on the key so that several Jobs can
// run over one store. It is built on the root package's public API only.
package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/stagedoor/once"
	"github.com/stagedoor/once/backends"
)

// Defaults of a Job.
const (
	DefaultLease = 30 * time.Second
	DefaultBatch = 100
	// MinLease is the shortest Config.Lease: the lease
	// must cover a call to the downstream service and then the store's
	// Resolve, and be a duration every store represents (Redis counts in
	// milliseconds). Below it every check would time out, or every
	// verdict reach the store after the lease, and no key be resolved.
	MinLease = time.Second
	// MaxLease is the longest Config.Lease; a longer
	// one means MaxLease. A Job that crashes (or stops
	// without ending its lease) while it asks about a key leaves the key
	// leased, free for no other Job and for no once.Resolve, until the
	// lease ends: at most this long.
	MaxLease = time.Hour
)

// ErrLateVerdict is reported (in Report.Errors, the key counted
// Failed and left held) for a settled verdict that its Check
// returned after its context's deadline, three quarters of the
// Job's lease: by then the lease may be over and the key another
// intent's, so the verdict is dropped and a later pass asks again.
var ErrLateVerdict = errors.New("reconcile: the verdict came after its lookup's deadline; the key stays held")

// HeldKey is a held key as a Job shows it to its Check.
type HeldKey struct {
	Scope string
	Key   string
	// Age is how long the key had been held when this Pass listed it.
	Age time.Duration
	// Code and Message are the held error's, as the owner held it.
	Code, Message string
}

// Verdict is what a Check learnt about a held key.
type Verdict[T any] struct {
	// Settled reports that the downstream service answered: the key is
	// resolved with Value (Err nil) or with Err as a final error. When
	// false the key stays held, for a later pass. An Err that its marks
	// make held or retryable (by the rule once.Do classifies with:
	// see once.WithClassifier) is no answer: the key stays held and is counted Failed,
	// with a *once.InvalidInputError (Field "err") in the report's Errors. An
	// Err with no mark is final.
	Settled bool
	Value   T
	Err     error
}

// Check asks the downstream service what happened to a held key
// — with the same once.DerivedKey fn sent, so the service can tell — and
// returns the verdict. Its context ends before the Job's lease on
// the key does; a verdict returned after its context's deadline is not
// stored (ErrLateVerdict). An error leaves the key held and is counted in
// the report; so does a panic, which the Job recovers.
type Check[T any] func(ctx context.Context, k HeldKey) (Verdict[T], error)

// Config configures a Job. The zero value means defaults.
type Config struct {
	// OlderThan selects keys held at least this long (default: all). A
	// negative one is refused by New.
	OlderThan time.Duration
	// Scope, when not empty, reconciles that scope alone; it must be a
	// valid scope name (the rules of once.ValidateKey), or New refuses it.
	Scope string
	// Lease is how long a Job has a key to itself while it asks;
	// 0 means DefaultLease. The Check's context ends
	// after three quarters of it, and a verdict it returns after that is
	// not stored (the key stays held: see ErrLateVerdict); another
	// instance may take the key once the lease ends, and the slow one's
	// Resolve is then refused (it is fenced by the lease: see
	// backends.ResolveParams). A Lease below MinLease, negative
	// included, is refused by New; one above MaxLease,
	// up to math.MaxInt64, means MaxLease.
	Lease time.Duration
	// Batch bounds the keys one Pass examines; default
	// DefaultBatch, at most backends.MaxListLimit. A negative one
	// is refused by New.
	Batch int
	// Codec encodes a settled verdict's Value; nil means the Keeper's
	// codec (once.WithCodec). It must be the codec the keys' callers
	// decode with: oncehttp.NewReconciler sets the middleware's. A panic in it is
	// recovered, as one in the Check is: the key stays held.
	Codec once.Codec
	// MaxOutcomeSize caps the encoded outcome of a settled verdict, as
	// once.WithMaxOutcomeSize caps Do's; 0 means the Keeper's. A verdict
	// over it is not stored: the key stays held and the pass counts it as
	// Failed (a *once.OutcomeTooLargeError). It must be at least the cap
	// the keys' callers store with, or a verdict they could have stored
	// leaves the key held: oncehttp.NewReconciler sets it so. A negative
	// one is refused by New.
	MaxOutcomeSize int
}

// Job settles held keys (see once.Hold) by asking the downstream
// service what happened. Several Jobs may run at once, in one
// process or many, over the same store: each key is leased by one of them
// at a time (backends.Store.LeaseHeld), and only the holder of the
// lease can resolve it (its Resolve is fenced by the lease:
// backends.ResolveParams.OnlyLeased), so a key is resolved once, never
// over a completion, and never once the key is no longer the held record
// it leased: a verdict does not land on a key that expired or was deleted
// meanwhile (the next intent's), nor over a takeover's claim. A Job is
// not safe for concurrent Pass calls; run one per goroutine.
//
// A panic in the user code a Job runs for a key (the
// Check, the codec, a verdict's value or final error's methods,
// an observer) never escapes Pass or Run: it is recovered, the key is
// left held (or resolved, when only an observer of the resolution
// panicked), and the pass goes on with the next key.
//
// A panic in the store is not recovered: it escapes Pass (and Run) with
// its value. The Job makes no further store call for the key (a
// store that panicked may be in any state, a lock held), so a key the
// store leased to it before panicking stays leased until the lease ends,
// or until this Job's next attempt at it: the key is backed off
// (see Report.Skipped) with its lease's owner remembered, so that
// attempt takes the lease back. A later Pass resumes after that key.
type Job[T any] struct {
	keeper *once.Keeper
	store  backends.Store // keeper's: its LeaseHeld, and the Resolve the verdicts are fenced on
	lister backends.Lister
	check  Check[T]
	cfg    Config
	opts   []once.Option // the verdicts' codec and cap, over the Keeper's
	// cursor is where the next List starts; rest is what the last List
	// returned that no Pass examined yet (a store error or panic ended the
	// pass first, or a relist returned more than Batch keys), and last
	// whether that List's page ended the walk. That page was listed from
	// pageCursor, seen is the keys of it examined so far, and seenResolved
	// how many of those this Job resolved (see relist).
	cursor       string
	rest         []backends.Listed
	last         bool
	pageCursor   string
	seen         []heldID
	seenResolved int
	// backoffs are the keys a store write failed for, skipped for a
	// while (see Report.Skipped); now is their clock.
	backoffs backoffs
	now      func() time.Time
}

// New returns a Job over k's held keys; outcomes are stored with
// once.Resolve under k's policy (its retention, registered errors and
// observers), encoded with cfg.Codec (k's codec by default) and capped at
// cfg.MaxOutcomeSize (k's cap by default). k's store must implement
// backends.Lister (itself or a store it decorates: see backends.As), and
// cfg be valid (see Config); New returns a *once.InvalidInputError
// otherwise. A Keeper whose options every Do refuses has every verdict
// refused too: each key is counted Failed, with that error in the
// report's Errors.
func New[T any](k *once.Keeper, check Check[T], cfg Config) (*Job[T], error) {
	if k == nil {
		return nil, &once.InvalidInputError{Field: "keeper", Reason: "nil"}
	}
	if check == nil {
		return nil, &once.InvalidInputError{Field: "check", Reason: "nil"}
	}
	lister, ok := backends.As[backends.Lister](k.Store())
	if !ok {
		return nil, &once.InvalidInputError{Field: "store", Reason: "does not implement backends.Lister"}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Lease == 0 {
		cfg.Lease = DefaultLease
	}
	cfg.Lease = min(cfg.Lease, MaxLease)
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	cfg.Batch = min(cfg.Batch, backends.MaxListLimit)
	var opts []once.Option
	if cfg.Codec != nil {
		opts = append(opts, once.WithCodec(cfg.Codec))
	}
	if cfg.MaxOutcomeSize > 0 {
		opts = append(opts, once.WithMaxOutcomeSize(cfg.MaxOutcomeSize))
	}
	return &Job[T]{keeper: k, store: k.Store(), lister: lister, check: check, cfg: cfg, opts: opts, backoffs: backoffs{}, now: time.Now}, nil
}

// validate reports a Config field set to a value New does not accept: a
// Lease that is negative or below MinLease, a negative Batch, OlderThan or
// MaxOutcomeSize (0 means the default for each), or a Scope that no record
// can have.
func (c *Config) validate() error {
	switch {
	case c.Lease < 0:
		return &once.InvalidInputError{Field: "reconciler_lease", Reason: "negative"}
	case c.Lease > 0 && c.Lease < MinLease:
		return &once.InvalidInputError{Field: "reconciler_lease", Reason: "shorter than " + MinLease.String()}
	case c.Batch < 0:
		return &once.InvalidInputError{Field: "reconciler_batch", Reason: "negative"}
	case c.OlderThan < 0:
		return &once.InvalidInputError{Field: "reconciler_older_than", Reason: "negative"}
	case c.MaxOutcomeSize < 0:
		return &once.InvalidInputError{Field: "reconciler_max_outcome_size", Reason: "negative"}
	case c.Scope != "":
		if reason := backends.NameProblem(c.Scope, backends.MaxScopeLen); reason != "" {
			return &once.InvalidInputError{Field: "scope", Reason: reason}
		}
	}
	return nil
}

// Run calls Pass every interval until ctx ends, and returns ctx's error
// or the first store error (a *once.StoreError): it does not retry, so
// that a store that is down is seen by the caller, who decides when to
// try again. A pass that did not reach the end of the held keys is
// followed at once by the next. Calling Run (or Pass) again after a store
// error goes on where it stopped, after the key that failed, which is
// backed off and free for other Jobs (see Pass). A nil ctx is refused at
// once with a *once.InvalidInputError (Field "ctx"), as Pass refuses it.
func (r *Job[T]) Run(ctx context.Context, interval time.Duration) error {
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

// validateContext refuses a nil ctx, as every once call does.
func validateContext(ctx context.Context) error {
	if ctx == nil {
		return &once.InvalidInputError{Field: "ctx", Reason: "nil"}
	}
	return nil
}
