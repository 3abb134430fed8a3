package once

import "time"

// Defaults of a local cache (see WithLocalCache).
const (
	DefaultLocalCacheTTL   = 10 * time.Second
	DefaultLocalCacheBytes = 16 << 20
)

// LocalCache configures the opt-in in-process cache of completed records
// of a Keeper (see WithLocalCache).
type LocalCache struct {
	// MaxEntries bounds the number of cached records; it must be positive
	// to enable the cache. Zero disables it.
	MaxEntries int
	// MaxBytes bounds the bytes held by cached records (scope, key,
	// fingerprint, outcome and a fixed per-entry overhead). Zero means
	// DefaultLocalCacheBytes; a record larger than MaxBytes is not cached.
	// It bounds as much again, separately, the claims this process is
	// running that the cache remembers so that their completion fills it
	// (scope, key, fingerprint, owner token and the same overhead each,
	// from the won claim until it completes, is released or held, or its
	// completion fails); a claim past it is not remembered, and its
	// completion is then not cached.
	MaxBytes int
	// TTL is the longest time a record stays cached. Zero means
	// DefaultLocalCacheTTL. It is also the longest time the cache can
	// answer from a record the store no longer holds (see WithLocalCache).
	TTL time.Duration

	// now is the cache's clock; tests of the package replace it.
	now func() time.Time
}

// WithLocalCache gives a Keeper a bounded in-process cache of completed
// records, so that a replay of a hot key answers from memory, without a
// store round trip, and concurrent duplicates of one key in this process
// make one store call between them. It is off by default.
//
// What it serves. Only completed records, which never change in the store
// except by deletion or expiry. A cached record answers a call exactly as
// the store's would: the fingerprint is checked with the same symmetric
// constant-time rule (backends.FingerprintMatches), so a call with another
// fingerprint gets ErrKeyReused and never the cached outcome; a matching
// call gets the replayed outcome. Pending records, and every record of a
// DoTx call (in a transaction), are never cached.
//
// How long. A record completed by this Keeper's Do is cached from the
// moment its first completion attempt was sent (a retried completion
// counts from the first) for min(TTL, retention), so it never outlives the
// record in the store. A record read from the store (completed by another
// process or before an eviction) is cached for min(TTL, retention, the
// time the record has left) from before the read, the last as the store
// reports it by its clock (backends.Record.RetentionRemaining), so it never
// outlives the record either. With a store that does not report the time
// left (zero: a third-party store), such an entry is cached for
// min(TTL, retention) from the read and may outlive the store's record by
// up to that time.
//
// What it can serve stale, and for how long. The cache cannot see a
// deletion: after an operator deletes a completed record (backends.Admin,
// the once CLI), or a store that does not report the time left expires a
// record that was read from it, this process can keep answering from the old record for up to TTL: replaying
// its outcome, or ErrKeyReused to another fingerprint, where the store
// would let fn run again. A Resolve, on this or another instance, never changes a
// completed record, so it makes nothing stale. A caller that joins another
// caller's claim in flight (a concurrent duplicate) gets the answer of that
// claim, which reflects the record as it was at most one store round trip
// before the caller arrived.
//
// WithLocalCache is a Keeper option (New). Passed to Scope.With, a config
// with MaxEntries 0 turns the cache off for that Scope; any other config
// keeps the Keeper's cache. A negative field is a programming error: every
// Do with the policy returns an *InvalidInputError (Field "local_cache").
func WithLocalCache(c LocalCache) Option {
	return func(cfg *config) {
		cfg.localCache = c
		if c.MaxEntries <= 0 {
			cfg.cache = nil
		}
	}
}

// validateLocalCache reports a local cache configured with a negative
// field.
func (c *config) validateLocalCache() error {
	lc := c.localCache
	if lc.MaxEntries < 0 || lc.MaxBytes < 0 || lc.TTL < 0 {
		return &InvalidInputError{Field: "local_cache", Reason: "negative"}
	}
	return nil
}

// buildLocalCache makes the cache that New attaches to the Keeper's policy.
func (c *config) buildLocalCache() {
	if c.localCache.MaxEntries > 0 && c.validateLocalCache() == nil {
		c.cache = newLocalCache(c.localCache)
	}
}

// withoutLocalCache returns c, or a copy without the cache when c has one.
func (c *config) withoutLocalCache() *config {
	if c == nil || c.cache == nil {
		return c
	}
	cp := *c
	cp.cache = nil
	return &cp
}
