package once

import "time"

// MinLease is the shortest lease WithLease accepts: renewed every third of
// it, a lease must leave a renewal time to reach the store and come back,
// and the timers that send renewals (and cancel fn's context when they
// fail) time to fire, which a lease of a few milliseconds does not on a
// loaded machine. It is also well above the resolution of every store
// (Redis counts in milliseconds).
const MinLease = 10 * time.Millisecond

// Defaults of a Keeper (each option's doc states its own).
const (
	defaultRetention      = 24 * time.Hour
	defaultLease          = 30 * time.Second
	defaultMaxOutcomeSize = 1 << 20
)

// config is the policy of a Keeper or of a Scope derived with Scope.With.
type config struct {
	retention  time.Duration
	lease      time.Duration
	holdFor    time.Duration // 0: one lease
	wait       time.Duration
	maxOutcome int
	codec      Codec
	classifier func(error) Class
	errorTypes []errorType
	observer   Observer
	tracer     Tracer
}

func defaultConfig() config {
	return config{
		retention:  defaultRetention,
		lease:      defaultLease,
		maxOutcome: defaultMaxOutcomeSize,
		codec:      jsonCodec{},
	}
}

// Option configures a Keeper (New) or one Scope (Scope.With).
type Option func(*config)

// Durations. Every positive duration (every lease from MinLease), up to
// math.MaxInt64, means "that long": the core passes it to the store
// unchanged and never computes a deadline that could overflow from it (a
// backend whose native range is smaller saturates at its maximum). A lease
// shorter than MinLease (non-positive included), a non-positive retention,
// a negative wait or a non-positive outcome size is a programming error:
// the option is applied as given and every Do and Resolve with the policy
// returns an *InvalidInputError (Field "lease", "retention", "wait" or
// "max_outcome_size") before any store call.

// WithRetention sets how long a record lives: a key seen again within it
// replays; after it, the key is a new intent. Counted from the claim while
// in progress (and never less than the live lease) and from completion
// once completed. The default is 24 hours; d must be positive.
func WithRetention(d time.Duration) Option {
	return func(c *config) { c.retention = d }
}

// WithLease sets how long a claim stays exclusive without renewal. While fn
// runs, Do renews it about every third of d, so fn may run longer than d;
// if the owner process dies, another call takes the key over once d has
// passed. The default is 30 seconds; d must be at least MinLease (10 ms).
//
// Do proves the lease by each renewal that succeeds: the store's lease
// then runs at least d from when that renewal (or the claim) was sent. If
// no renewal has succeeded for d less a margin of d/5 (24 s of the default
// 30 s), as measured on this process's monotonic clock, fn's context is
// cancelled with cause ErrLeaseLost, whatever a renewal in flight is doing
// (a stalled connection, a driver that does not honour its context), and
// renewal stops; it is cancelled sooner when the store reports the claim
// lost, or when a renewal fails two thirds of d after the last proof. The
// margin, d/5, is the time fn has to stop before another call can take
// the key over, if the timers of a loaded process fire late and the
// store's clock runs faster than this one. Each renewal's own context ends
// at that deadline too.
func WithLease(d time.Duration) Option {
	return func(c *config) { c.lease = d }
}

// WithWait makes a call that finds the key in progress wait up to d for
// the owner to finish and then return its outcome (or run fn, if the owner
// released the claim), instead of returning ErrInProgress at once. The
// default is 0: no waiting; d must not be negative.
//
// With a store that is a backends.Watcher (PostgreSQL, Redis, memory) a
// waiting call claims again when the store signals a change of the record,
// when the owner's lease as last seen ends, and otherwise every 2 s (a
// lost notification): a constant number of claims per change, however
// long the owner runs. With any other store it polls, claiming with
// backoff from 10 ms doubling to 500 ms.
func WithWait(d time.Duration) Option {
	return func(c *config) { c.wait = d }
}

// WithMaxOutcomeSize caps the encoded size of a stored outcome, in bytes.
// The default is 1 MiB; n must be positive.
func WithMaxOutcomeSize(n int) Option {
	return func(c *config) { c.maxOutcome = n }
}

// validate reports the first option set to a value it does not accept.
func (c *config) validate() error {
	switch {
	case c.lease <= 0:
		return &InvalidInputError{Field: "lease", Reason: "not positive"}
	case c.lease < MinLease:
		return &InvalidInputError{Field: "lease", Reason: "shorter than " + MinLease.String()}
	case c.retention <= 0:
		return &InvalidInputError{Field: "retention", Reason: "not positive"}
	case c.wait < 0:
		return &InvalidInputError{Field: "wait", Reason: "negative"}
	case c.maxOutcome <= 0:
		return &InvalidInputError{Field: "max_outcome_size", Reason: "not positive"}
	}
	return nil
}

// WithCodec sets the codec for stored values and final errors. The default
// is encoding/json; nil keeps the current codec.
func WithCodec(codec Codec) Option {
	return func(c *config) {
		if codec != nil {
			c.codec = codec
		}
	}
}

// WithClassifier sets the function that classifies errors fn returns
// without marking them with Final, Hold or Retry. The default classifies
// every such error as ClassRetry; nil restores the default.
//
// An error may carry several marks, wrapped (fmt.Errorf's %w) or joined
// (errors.Join) anywhere in its tree. One rule decides its class, for Do
// (and every call built on it, package consume's included) as for the
// answer given to Resolve or in a reconciler's verdict (package reconcile):
//
//   - A mark speaks for the error it wraps, marks inside included:
//     Retry(Hold(err)) is retryable, since the code that added the outer
//     mark had the last word.
//   - The outermost marks are those that no other mark wraps, however
//     deep: the tree is walked through Unwrap() error and Unwrap() []error
//     (and an As method that finds a mark, where Unwrap finds none), and
//     an unmarked wrapper, such as fmt.Errorf("charge: %w", Hold(err)),
//     changes nothing.
//   - Among the outermost marks the most cautious wins, whatever their
//     order or depth: Hold, then Retry, then Final. An outcome partly
//     unknown is unknown: a final answer stored for it (which no
//     reconciler revisits) or fn run again could hide or repeat an effect
//     that may have happened. An outcome partly retryable is retried: a
//     final answer stored beside a failure that asked for another attempt
//     would answer the intent without that attempt, for the retention,
//     while running fn again is what the Retry mark says is safe.
//
// The classifier is asked only about an error with no mark; Resolve and a
// reconciler take an error with no mark as final.
func WithClassifier(f func(err error) Class) Option {
	return func(c *config) { c.classifier = f }
}
