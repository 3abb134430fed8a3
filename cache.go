package once

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once/backends"
)

// localCache is the in-process layer of a Keeper configured with
// WithLocalCache: completed records, the claims in flight (so that
// concurrent duplicates share one store call) and the claims this process
// holds (so that their completion fills the cache).
type localCache struct {
	now     func() time.Time
	ttl     time.Duration
	records *recordCache

	mu      sync.Mutex
	flights map[cacheKey]*flight
	// owned is the claims this process is running (see ownedClaim),
	// from the won Claim until the claim settles (settleOwned), within
	// maxOwned entries and maxOwnedBytes bytes (ownedBytes now): a claim
	// that finds no room is not remembered, which only costs a cache
	// fill.
	owned         map[cacheKey]ownedClaim
	maxOwned      int
	ownedBytes    int
	maxOwnedBytes int
	// joined counts the duplicates that joined a claim in flight.
	joined atomic.Int64
}

// flight is one store Claim that concurrent duplicates with the same
// fingerprint wait for instead of sending their own.
type flight struct {
	fp    []byte
	lease time.Duration
	done  chan struct{}
	// Set by the leader before done is closed.
	res backends.ClaimResult
	err error
	at  time.Time
	// next, set under localCache.mu once done is closed and the leader
	// got no answer, is the flight the duplicates that joined this one
	// wait for next.
	next *flight
}

// ownedClaim is a claim this process won: its owner token and, when known,
// the fingerprint the record holds, so that its completion can be cached.
type ownedClaim struct {
	owner   string
	fp      []byte
	fpKnown bool
	expires time.Time
	// completeSent is when the first completion attempt was sent: a
	// retried completion whose first reply was lost may have landed then,
	// and the record lives retention from that moment.
	completeSent time.Time
	// size is what the entry counts toward maxOwnedBytes.
	size int
}

// ownedSweep bounds the entries own examines for expired ones when owned
// is full, so that a claim never scans the whole map under lc.mu.
const ownedSweep = 8

// errFlightAborted is the result of a flight whose leader never got an
// answer (its Claim panicked); followers then call the store themselves.
var errFlightAborted = errors.New("once: claim in flight aborted")

func newLocalCache(c LocalCache) *localCache {
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultLocalCacheBytes
	}
	if c.TTL == 0 {
		c.TTL = DefaultLocalCacheTTL
	}
	if c.now == nil {
		c.now = time.Now
	}
	return &localCache{
		now: c.now, ttl: c.TTL,
		records:       newRecordCache(c.MaxEntries, c.MaxBytes),
		flights:       make(map[cacheKey]*flight),
		owned:         make(map[cacheKey]ownedClaim),
		maxOwned:      max(c.MaxEntries, 1024),
		maxOwnedBytes: c.MaxBytes,
	}
}

// claimStore is the store Claim of a call, through the local cache when the
// scope has one. The caller has just missed the cache's completed records
// for this key (replayCached), so the cache does not look again.
func (s Scope) claimStore(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	if lc := s.cfg.cache; lc != nil {
		return lc.claim(ctx, s.store, p)
	}
	return s.store.Claim(ctx, p)
}

// completeStore is the store Complete of a call, through the local cache
// when the scope has one.
func (s Scope) completeStore(ctx context.Context, p backends.CompleteParams) (bool, error) {
	if lc := s.cfg.cache; lc != nil {
		return lc.complete(ctx, s.store, p)
	}
	return s.store.Complete(ctx, p)
}

// claim joins a claim in flight for the same key and fingerprint, or sends
// the Claim and shares its result with the duplicates that joined it. It
// does not look at the cached completed records: its caller just did
// (replayCached).
//
// When the leader of the flight it joined got no answer (its Claim
// failed, its context ended, or it panicked), the duplicates that joined
// it share one next flight (flight.next): the first of them to wake leads
// it, or they all join the flight a newcomer leads meanwhile, so a failed
// claim costs one store call more, never one per duplicate (a store that
// just timed out is the one least able to take a burst).
func (lc *localCache) claim(ctx context.Context, store backends.Store, p backends.ClaimParams) (backends.ClaimResult, error) {
	k := cacheKey{p.Scope, p.Key}
	lc.mu.Lock()
	f := lc.flights[k]
	if f == nil {
		f = lc.startFlightLocked(k, p)
		lc.mu.Unlock()
		return lc.lead(ctx, store, p, k, f)
	}
	lc.mu.Unlock()
	if subtle.ConstantTimeCompare(f.fp, p.Fingerprint) != 1 {
		return lc.send(ctx, store, p, k)
	}
	lc.joined.Add(1)
	for {
		select {
		case <-f.done:
		case <-ctx.Done():
			return backends.ClaimResult{}, ctx.Err()
		}
		if res, ok := f.followerResult(lc.now()); ok {
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return backends.ClaimResult{}, err
		}
		// The leader got no answer, and its flight is out of the map (it
		// leaves before done is closed): join or lead f's next flight.
		lc.mu.Lock()
		if f.next == nil {
			if cur := lc.flights[k]; cur != nil && subtle.ConstantTimeCompare(cur.fp, f.fp) == 1 {
				f.next = cur // a newcomer leads one already
			} else {
				next := &flight{fp: f.fp, lease: p.Lease, done: make(chan struct{}), err: errFlightAborted}
				if cur == nil {
					lc.flights[k] = next
				}
				f.next = next
				lc.mu.Unlock()
				return lc.lead(ctx, store, p, k, next)
			}
		}
		f = f.next
		lc.mu.Unlock()
	}
}

// startFlightLocked puts a new flight for the caller's claim in the map.
func (lc *localCache) startFlightLocked(k cacheKey, p backends.ClaimParams) *flight {
	f := &flight{fp: bytes.Clone(p.Fingerprint), lease: p.Lease, done: make(chan struct{}), err: errFlightAborted}
	lc.flights[k] = f
	return f
}

// lead sends the Claim of flight f, shares its result with the
// duplicates that joined f, and takes f out of the map before it closes
// f.done.
func (lc *localCache) lead(ctx context.Context, store backends.Store, p backends.ClaimParams, k cacheKey, f *flight) (backends.ClaimResult, error) {
	defer func() {
		lc.mu.Lock()
		if lc.flights[k] == f {
			delete(lc.flights, k)
		}
		lc.mu.Unlock()
		close(f.done)
	}()
	res, err := lc.send(ctx, store, p, k)
	f.res, f.err, f.at = res, err, lc.now()
	// The flight keeps its own bytes: the leader's value may alias res.
	f.res.Existing.Outcome = bytes.Clone(res.Existing.Outcome)
	return res, err
}

// followerResult is what a duplicate that joined f gets: what the store
// would have told it right after the leader's claim. A claim the leader
// won is, for the duplicate, a pending record with the leader's lease. A
// failed leader (its context ended, the store failed) gives nothing: the
// duplicates then share the next flight (see claim). Every follower gets its own
// outcome bytes; the fingerprint is shared: the core only compares it
// (backends.FingerprintMatches), never modifies it or hands it to user
// code.
func (f *flight) followerResult(now time.Time) (backends.ClaimResult, bool) {
	if f.err != nil {
		return backends.ClaimResult{}, false
	}
	elapsed := now.Sub(f.at)
	if f.res.Claimed {
		return backends.ClaimResult{Existing: backends.Record{
			State: backends.StatePending, Fingerprint: f.fp, LeaseRemaining: f.lease - elapsed,
		}}, true
	}
	res := f.res
	// The leader and each follower decode their own bytes: a codec may
	// decode without copying, and the caller may modify its value.
	res.Existing.Outcome = bytes.Clone(res.Existing.Outcome)
	if res.Existing.State == backends.StatePending {
		res.Existing.LeaseRemaining -= elapsed
	}
	return res, true
}

// send makes the store Claim and records what it learns: a completed
// record is cached for min(TTL, retention) from before the request was
// sent; a won claim is remembered so that its completion is cached.
func (lc *localCache) send(ctx context.Context, store backends.Store, p backends.ClaimParams, k cacheKey) (backends.ClaimResult, error) {
	sent := lc.now()
	res, err := store.Claim(ctx, p)
	if err != nil {
		return res, err
	}
	switch {
	case res.Claimed:
		lc.own(k, ownedClaim{
			owner: p.Owner, fp: bytes.Clone(p.Fingerprint),
			// A takeover with no fingerprint keeps the stored one, unseen.
			fpKnown: len(p.Fingerprint) > 0 || !res.TookOver,
			expires: sent.Add(min(p.Lease, p.Retention)),
		})
	case res.Existing.State == backends.StateCompleted:
		lc.records.put(k, res.Existing, lc.expiry(sent, p.Retention, res.Existing.RetentionRemaining), lc.now())
	}
	return res, nil
}

// expiry is when an entry learnt at sent, for a record that lives
// retention, leaves the cache: after min(TTL, retention) and, when the
// store reported it (left > 0), the time the record had left as of the
// read. The read came after sent, so sent + left is never later than the
// record's end in the store.
func (lc *localCache) expiry(sent time.Time, retention, left time.Duration) time.Time {
	d := min(lc.ttl, retention)
	if left > 0 {
		d = min(d, left)
	}
	return sent.Add(d)
}

// own remembers a won claim, keeping owned within its bounds: when the
// claim does not fit, it drops up to ownedSweep of the claims whose first
// lease has passed (an entry a settled claim left, which settleOwned
// normally removes first), and if the claim still does not fit it
// forgets the new one (its completion is then simply not cached).
func (lc *localCache) own(k cacheKey, c ownedClaim) {
	c.size = cacheEntryOverhead + len(k.scope) + len(k.key) + len(c.fp) + len(c.owner)
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if old, ok := lc.owned[k]; ok {
		lc.dropOwnedLocked(k, old)
	}
	if !lc.ownedFitsLocked(c.size) {
		now, seen := lc.now(), 0
		for key, oc := range lc.owned {
			if seen++; seen > ownedSweep {
				break
			}
			if !now.Before(oc.expires) {
				lc.dropOwnedLocked(key, oc)
			}
		}
		if !lc.ownedFitsLocked(c.size) {
			return
		}
	}
	lc.owned[k] = c
	lc.ownedBytes += c.size
}

func (lc *localCache) ownedFitsLocked(size int) bool {
	return len(lc.owned) < lc.maxOwned && lc.ownedBytes+size <= lc.maxOwnedBytes
}

func (lc *localCache) dropOwnedLocked(k cacheKey, oc ownedClaim) {
	delete(lc.owned, k)
	lc.ownedBytes -= oc.size
}

// settleOwned forgets the claim of (scope, key) by owner, if remembered:
// the claim has settled (completed, released, held, lost or left
// unrecorded), so no completion of it is to be cached any more.
func (lc *localCache) settleOwned(scope, key, owner string) {
	k := cacheKey{scope, key}
	lc.mu.Lock()
	if oc, ok := lc.owned[k]; ok && oc.owner == owner {
		lc.dropOwnedLocked(k, oc)
	}
	lc.mu.Unlock()
}

// complete sends Complete; when it applied, the record now holds this
// outcome and the claim's fingerprint (a completion is fenced by the
// owner, so nothing changed the record since the claim), and it lives
// retention from a moment after the first attempt of the claim's
// completion was sent (a retry may only confirm an attempt whose reply was
// lost): caching it until that moment + min(TTL, retention) never
// outlives it.
func (lc *localCache) complete(ctx context.Context, store backends.Store, p backends.CompleteParams) (bool, error) {
	k := cacheKey{p.Scope, p.Key}
	sent := lc.now()
	lc.mu.Lock()
	if oc, ok := lc.owned[k]; ok && oc.owner == p.Owner {
		if oc.completeSent.IsZero() {
			oc.completeSent = sent
			lc.owned[k] = oc
		}
		sent = oc.completeSent
	}
	lc.mu.Unlock()
	applied, err := store.Complete(ctx, p)
	if err != nil {
		return applied, err
	}
	lc.mu.Lock()
	oc, ok := lc.owned[k]
	if ok && oc.owner == p.Owner {
		lc.dropOwnedLocked(k, oc)
	}
	lc.mu.Unlock()
	if applied && ok && oc.owner == p.Owner && oc.fpKnown {
		rec := backends.Record{State: backends.StateCompleted, Fingerprint: oc.fp, Outcome: p.Outcome}
		lc.records.put(k, rec, lc.expiry(sent, p.Retention, 0), lc.now())
	}
	return applied, nil
}

// replayCached answers a call from the live record cached for (scope,
// key), if any (ok false otherwise, and always when ctx has ended, so that
// the call then reports its context's end as a store call would): the
// fingerprint check, then one decode of the outcome into a value of the
// caller's own. A hit sends nothing to the store, draws no owner token and
// arms no timer.
func replayCached[T any](ctx context.Context, s Scope, key string, fp Fingerprint) (out Outcome[T], ok bool, err error) {
	cfg, lc := s.cfg, s.cfg.cache
	if ctx.Err() != nil {
		return Outcome[T]{}, false, nil
	}
	start := cfg.clock()
	e := lc.records.lookup(cacheKey{s.name, key}, lc.now())
	if e == nil {
		return Outcome[T]{}, false, nil
	}
	if !backends.FingerprintMatches(e.rec.Fingerprint, fp) {
		cfg.emit(ctx, Event{Kind: EventKeyReused, Scope: s.name, Key: key, Op: "claim", StoreTime: cfg.since(start)})
		return Outcome[T]{}, true, ErrKeyReused
	}
	data := e.rec.Outcome
	if _, copies := cfg.codec.(JSONCodec); !copies {
		// A codec may decode without copying (the value aliases data):
		// each caller decodes its own bytes, never the entry's.
		// encoding/json copies what it keeps (an Unmarshaler must copy what
		// it retains, by json's contract), so JSONCodec reads the entry's.
		data = bytes.Clone(data)
	}
	out, finalErr, decodeErr := replay[T](cfg, data)
	cfg.emit(ctx, Event{Kind: EventReplayed, Scope: s.name, Key: key, Op: "claim", StoreTime: cfg.since(start), FnErr: finalErr, Err: decodeErr})
	if decodeErr != nil {
		return out, true, decodeErr
	}
	return out, true, finalErr
}
