package localcache

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once/backends"
)

// New returns store with a local cache in front of it (see the package
// documentation), bounded by cfg; a nil cfg means every default. The
// result implements backends.Admin when store does (a Delete through it
// also drops the key's cached record); backends.As finds store's other
// optional interfaces (Watcher, Lister) through it. New returns a
// *ConfigError for a negative field of cfg or a nil store. A call inside a
// transaction (once.DoTx) uses the transaction's store, never the cache.
func New(store backends.Store, cfg *Config) (backends.Store, error) {
	c, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	if store == nil {
		return nil, &ConfigError{Field: "store", Reason: "is nil"}
	}
	s := &cache{
		store: store, now: c.Now, ttl: c.TTL,
		records:       newRecords(c.MaxEntries, c.MaxBytes),
		flights:       make(map[cacheKey]*flight),
		owned:         make(map[cacheKey]ownedClaim),
		maxOwnedBytes: c.MaxBytes,
	}
	if admin, ok := backends.As[backends.Admin](store); ok {
		return adminCache{cache: s, admin: admin}, nil
	}
	return s, nil
}

// cache is a store with a local cache: completed records, the claims in
// flight (so that concurrent duplicates share one store call) and the
// claims won through it (so that their completion fills it).
type cache struct {
	store   backends.Store
	now     func() time.Time
	ttl     time.Duration
	records *records

	mu      sync.Mutex
	flights map[cacheKey]*flight
	// owned is the claims won through the cache (see ownedClaim), from
	// the won Claim until the claim settles (settle), within
	// maxOwnedBytes bytes (ownedBytes now): a claim that finds no room is
	// not remembered, which only costs a cache fill.
	owned         map[cacheKey]ownedClaim
	ownedBytes    int
	maxOwnedBytes int
	// joined counts the duplicates that joined a claim in flight.
	joined atomic.Int64
}

var _ backends.Store = (*cache)(nil)

// Unwrap returns the store the cache fronts (see backends.As).
func (c *cache) Unwrap() backends.Store { return c.store }

// Claim answers from the cached record of the key when there is a live
// one: the completed record as the store would report it, whatever the
// fingerprint (the caller checks it, as on a store's answer). Otherwise it
// joins a Claim in flight for the same key and fingerprint, or sends one.
// A call whose context has ended, or with an owner or fingerprint the
// store refuses, goes to the store, which reports it.
func (c *cache) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	if ctx.Err() != nil || backends.OwnerProblem(p.Owner, true) != "" || backends.FingerprintProblem(p.Fingerprint) != "" {
		return c.store.Claim(ctx, p)
	}
	k := cacheKey{p.Scope, p.Key}
	now := c.now()
	if e := c.records.lookup(k, now); e != nil {
		return backends.ClaimResult{Existing: e.record(now)}, nil
	}
	return c.claim(ctx, p, k)
}

// send makes the store Claim and records what it learns: a completed
// record is cached for min(TTL, retention) from before the request was
// sent; a won claim is remembered so that its completion is cached.
func (c *cache) send(ctx context.Context, p backends.ClaimParams, k cacheKey) (backends.ClaimResult, error) {
	sent, deletes := c.now(), c.records.deletes.Load()
	res, err := c.store.Claim(ctx, p)
	if err != nil {
		return res, err
	}
	switch {
	case res.Claimed:
		c.own(k, ownedClaim{
			owner: p.Owner, fp: clone(p.Fingerprint),
			// A takeover with no fingerprint keeps the stored one, unseen.
			fpKnown: len(p.Fingerprint) > 0 || !res.TookOver,
			expires: sent.Add(min(p.Lease, p.Retention)),
		})
	case res.Existing.State == backends.StateCompleted:
		c.records.put(k, res.Existing, c.expiry(sent, p.Retention, res.Existing.ExpiresIn), c.now(), deletes)
	}
	return res, nil
}

// expiry is when an entry learnt at sent, for a record that lives
// retention, leaves the cache: after min(TTL, retention) and, when the
// store reported it (left > 0), the time the record had left as of the
// read. The read came after sent, so sent + left is never later than the
// record's end in the store.
func (c *cache) expiry(sent time.Time, retention, left time.Duration) time.Time {
	d := min(c.ttl, retention)
	if left > 0 {
		d = min(d, left)
	}
	return sent.Add(d)
}

// Complete sends Complete and forgets the claim, whatever the answer.
// When it applied to a claim won through the cache, the record now holds
// this outcome and the claim's fingerprint (a completion is fenced by the
// owner, so nothing changed the record since the claim), and it lives
// retention from a moment after this Complete was sent: it is cached until
// that moment + min(TTL, retention), so it never outlives the record. A
// Complete that failed may have applied (its reply lost): a retry that
// reports it applied is not cached, since the record's retention may have
// started at the first attempt.
func (c *cache) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	sent, deletes := c.now(), c.records.deletes.Load()
	applied, err := c.store.Complete(ctx, p)
	k := cacheKey{p.Scope, p.Key}
	oc, ok := c.settle(k, p.Owner)
	if err == nil && applied && ok && oc.fpKnown {
		rec := backends.Record{State: backends.StateCompleted, Fingerprint: oc.fp, Outcome: p.Outcome}
		c.records.put(k, rec, c.expiry(sent, p.Retention, 0), c.now(), deletes)
	}
	return applied, err
}

// Renew sends Renew; a claim the store reports lost is forgotten.
func (c *cache) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	applied, err := c.store.Renew(ctx, p)
	if err == nil && !applied {
		c.settle(cacheKey{p.Scope, p.Key}, p.Owner)
	}
	return applied, err
}

// Checkpoint sends Checkpoint; a claim the store reports lost is
// forgotten.
func (c *cache) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	applied, err := c.store.Checkpoint(ctx, p)
	if err == nil && !applied {
		c.settle(cacheKey{p.Scope, p.Key}, p.Owner)
	}
	return applied, err
}

// Release sends Release and forgets the claim.
func (c *cache) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	defer c.settle(cacheKey{p.Scope, p.Key}, p.Owner)
	return c.store.Release(ctx, p)
}

// Hold sends Hold and forgets the claim: a held record is never cached.
func (c *cache) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	defer c.settle(cacheKey{p.Scope, p.Key}, p.Owner)
	return c.store.Hold(ctx, p)
}

// Resolve sends Resolve. It changes no cached record: a Resolve never
// changes a completed record.
func (c *cache) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	return c.store.Resolve(ctx, p)
}

// LeaseHeld sends LeaseHeld: a held record is never cached.
func (c *cache) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return c.store.LeaseHeld(ctx, p)
}

// adminCache is a cache over a store that implements backends.Admin.
type adminCache struct {
	*cache
	admin backends.Admin
}

var _ backends.Admin = adminCache{}

// Get reads the record from the store.
func (c adminCache) Get(ctx context.Context, scope, key string) (backends.Record, error) {
	return c.admin.Get(ctx, scope, key)
}

// Delete deletes the record in the store and drops the cached one, also
// when the store reports an error (the delete may have applied). A record
// read from the store before the delete is not cached after it.
func (c adminCache) Delete(ctx context.Context, scope, key string) (bool, error) {
	defer c.records.forget(cacheKey{scope, key})
	return c.admin.Delete(ctx, scope, key)
}
