package once

import "time"

// Defaults of a Keeper.
const (
	DefaultRetention  = 24 * time.Hour
	DefaultLease      = 30 * time.Second
	DefaultMaxOutcome = 1 << 20
)

// config is the policy of a Keeper or of a Scope derived with Scope.With.
type config struct {
	retention  time.Duration
	lease      time.Duration
	wait       time.Duration
	maxOutcome int
	codec      Codec
	classifier Classifier
	errorTypes []errorType
	observer   Observer
}

func defaultConfig() config {
	return config{
		retention:  DefaultRetention,
		lease:      DefaultLease,
		maxOutcome: DefaultMaxOutcome,
		codec:      JSONCodec{},
	}
}

// Option configures a Keeper (New) or one Scope (Scope.With).
type Option func(*config)

// WithRetention sets how long a record lives: a key seen again within it
// replays; after it, the key is a new intent. Counted from the claim while
// in progress and from completion once completed. The default is 24 hours;
// a non-positive d keeps the current value.
func WithRetention(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.retention = d
		}
	}
}

// WithLease sets how long a claim stays exclusive without renewal. While fn
// runs, Do renews it about every third of d, so fn may run longer than d;
// if the owner process dies, another call takes the key over once d has
// passed. The default is 30 seconds; a non-positive d keeps the current
// value.
func WithLease(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.lease = d
		}
	}
}

// WithWait makes a call that finds the key in progress wait up to d for
// the owner to finish and then return its outcome (or run fn, if the owner
// released the claim), instead of returning ErrInProgress at once. The
// default is 0: no waiting.
func WithWait(d time.Duration) Option {
	return func(c *config) {
		if d >= 0 {
			c.wait = d
		}
	}
}

// WithMaxOutcomeSize caps the encoded size of a stored outcome, in bytes.
// The default is 1 MiB; a non-positive n keeps the current value.
func WithMaxOutcomeSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxOutcome = n
		}
	}
}

// WithCodec sets the codec for stored values and final errors. The default
// is JSONCodec; nil keeps the current codec.
func WithCodec(codec Codec) Option {
	return func(c *config) {
		if codec != nil {
			c.codec = codec
		}
	}
}

// WithClassifier sets the function that classifies errors fn returns
// without marking them with Final or Hold. The default classifies every
// such error as Retryable; nil restores the default.
func WithClassifier(f Classifier) Option {
	return func(c *config) { c.classifier = f }
}
