// Package memory is the embedded, in-process once store: no server, no
// configuration, safe for concurrent use by the goroutines of one process.
//
// Records live in sharded maps guarded by mutexes. Expired records are
// treated as absent the moment they expire (lazily, on access) and are
// removed by an amortised sweep that runs inside writes, so the store needs
// no background goroutine and nothing to close. A process restart loses
// every record: use the PostgreSQL or Redis backend when duplicates can
// arrive at more than one process or across restarts.
//
// # Setup
//
// The store has the shape of every once store, less what a map needs not:
// New(*Config), where a nil *Config means defaults, takes no connection
// and returns no error; there is nothing to migrate; Sweep removes expired
// records now. Config.Now is the clock, as on the SQLite store.
package memory

import (
	"bytes"
	"context"
	"hash/maphash"
	"sync"
	"time"

	"github.com/stagedoor/once/backends"
)

const shardCount = 32

// Config configures a Store. A nil *Config means defaults.
type Config struct {
	// Now is the store's clock, used for every lease and retention
	// computation. Tests set it to a fake clock to expire leases and
	// records deterministically. Defaults to time.Now.
	Now func() time.Time
}

// Store is the in-memory backend. The zero value is not usable; call New.
type Store struct {
	now    func() time.Time
	seed   maphash.Seed
	shards [shardCount]shard
}

var (
	_ backends.Store   = (*Store)(nil)
	_ backends.Watcher = (*Store)(nil)
)

type recordKey struct {
	scope string
	key   string
}

type entry struct {
	state       backends.State
	fingerprint []byte
	owner       string
	// leaseUntil is the owner's lease end while pending, a reconciler's
	// lease end while held.
	leaseUntil time.Time
	expiresAt  time.Time
	outcome    []byte
	// steps is the record's checkpoints, nil when it has none.
	steps []byte
	// since is when the record was claimed (pending) or held (held).
	since time.Time
	// holdUntil, code and message describe a held record.
	holdUntil     time.Time
	code, message string
	// seq is the record's place in its shard's listing of its state, zero
	// when there is none (see listing and shard.listingOf).
	seq uint64
}

type shard struct {
	mu       sync.Mutex
	records  map[recordKey]entry
	watchers map[recordKey]chan struct{}
	// writesSinceSweep and sizeAtSweep drive the amortised sweep: a full
	// sweep of the shard runs once the writes since the last sweep exceed
	// the number of records it left, so each write pays O(1) on average.
	writesSinceSweep int
	sizeAtSweep      int
	// open orders the pending and held records for List, completed the
	// completed ones, kept from the first List of completed records in
	// the shard on (keepsCompleted), so that a store never asked for them
	// pays nothing per completion; lastSeq numbers the places of both, so
	// that a place is its record's in one listing at most.
	open, completed listing
	keepsCompleted  bool
	lastSeq         uint64
}

// listingOf returns the listing of the records in state st, nil for
// completed records while the shard keeps none.
func (sh *shard) listingOf(st backends.State) *listing {
	switch {
	case st != backends.StateCompleted:
		return &sh.open
	case sh.keepsCompleted:
		return &sh.completed
	}
	return nil
}

// keepCompleted starts the shard's listing of completed records, if it
// has none: their places, in no particular order. The caller holds sh.mu.
func (sh *shard) keepCompleted() {
	if sh.keepsCompleted {
		return
	}
	sh.keepsCompleted = true
	for k, e := range sh.records {
		if e.state == backends.StateCompleted {
			sh.lastSeq++
			e.seq = sh.completed.add(k, sh.lastSeq)
			sh.records[k] = e
		}
	}
}

// New returns an empty Store.
func New(cfg *Config) *Store {
	s := &Store{now: time.Now, seed: maphash.MakeSeed()}
	if cfg != nil && cfg.Now != nil {
		s.now = cfg.Now
	}
	for i := range s.shards {
		s.shards[i].records = make(map[recordKey]entry)
		s.shards[i].watchers = make(map[recordKey]chan struct{})
	}
	return s
}

func (s *Store) shardFor(scope, key string) *shard {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(scope)
	h.WriteByte(0)
	h.WriteString(key)
	return &s.shards[h.Sum64()%shardCount]
}

// lookup returns the live record for k, deleting it when it has expired.
// The caller holds sh.mu.
func (sh *shard) lookup(k recordKey, now time.Time) (entry, bool) {
	e, ok := sh.records[k]
	if !ok {
		return entry{}, false
	}
	if !now.Before(e.expiresAt) {
		sh.delete(k, e)
		return entry{}, false
	}
	return e, true
}

// put stores e under k, wakes watchers of k and runs the amortised sweep.
// e keeps the listing place of the record it replaces when it comes from
// that record (same seq) and stays in its listing (pending and held, or
// completed), and takes a new one otherwise. The caller holds sh.mu.
func (sh *shard) put(k recordKey, e entry, now time.Time) {
	old, had := sh.records[k]
	l := sh.listingOf(e.state)
	switch {
	case l == nil:
		e.seq = 0
	case !had || e.seq == 0 || e.seq != old.seq || l != sh.listingOf(old.state):
		sh.lastSeq++
		e.seq = l.add(k, sh.lastSeq)
	}
	sh.records[k] = e
	if had && old.seq != 0 && old.seq != e.seq {
		sh.listingOf(old.state).left(1, sh.records)
	}
	sh.changed(k)
	sh.writesSinceSweep++
	if sh.writesSinceSweep > sh.sizeAtSweep+64 {
		sh.sweep(now)
	}
}

// remove deletes k and wakes its watchers. The caller holds sh.mu.
func (sh *shard) remove(k recordKey) {
	if e, ok := sh.records[k]; ok {
		sh.delete(k, e)
	}
	sh.changed(k)
}

// delete deletes k, whose record is e, leaving its listing place stale.
// The caller holds sh.mu.
func (sh *shard) delete(k recordKey, e entry) {
	delete(sh.records, k)
	if e.seq != 0 {
		sh.listingOf(e.state).left(1, sh.records)
	}
}

func (sh *shard) changed(k recordKey) {
	if ch, ok := sh.watchers[k]; ok {
		close(ch)
		delete(sh.watchers, k)
	}
}

func (sh *shard) sweep(now time.Time) int {
	removed, open, completed := 0, 0, 0
	for k, e := range sh.records {
		if !now.Before(e.expiresAt) {
			delete(sh.records, k)
			removed++
			switch {
			case e.seq == 0:
			case e.state == backends.StateCompleted:
				completed++
			default:
				open++
			}
		}
	}
	sh.open.left(open, sh.records)
	sh.completed.left(completed, sh.records)
	// A watcher of a key with no record would wait for a change that may
	// never come; wake it (spurious wake-ups are allowed) and drop it.
	for k, ch := range sh.watchers {
		if _, ok := sh.records[k]; !ok {
			close(ch)
			delete(sh.watchers, k)
		}
	}
	sh.writesSinceSweep = 0
	sh.sizeAtSweep = len(sh.records)
	return removed
}

// view is the record e as a caller sees it at now. The caller gets its own
// copy of the fingerprint and of the outcome, as from a server (see
// backends.Record): a zero-copy codec's value aliases the bytes it decoded,
// and its caller may modify it.
func view(e entry, now time.Time) backends.Record {
	r := backends.Record{State: e.state, ExpiresIn: e.expiresAt.Sub(now)} // positive: e is live at now
	r.Fingerprint, r.Outcome = clone2(e.fingerprint, e.outcome)
	switch e.state {
	case backends.StatePending:
		r.LeaseRemaining = e.leaseUntil.Sub(now)
		r.Age = now.Sub(e.since)
	case backends.StateHeld:
		r.LeaseRemaining = e.leaseUntil.Sub(now)
		r.Age = now.Sub(e.since)
		r.Held = backends.HeldInfo{Remaining: e.holdUntil.Sub(now), Code: e.code, Message: e.message}
	}
	return r
}

// Claim implements backends.Store. A Claim by the owner of the pending
// record (a re-send) reports Claimed and changes nothing.
func (s *Store) Claim(ctx context.Context, p backends.ClaimParams) (backends.ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return backends.ClaimResult{}, err
	}
	if err := checkWrite("claim", p.Scope, p.Key, p.Owner, p.Fingerprint); err != nil {
		return backends.ClaimResult{}, err
	}
	k := recordKey{p.Scope, p.Key}
	sh := s.shardFor(p.Scope, p.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	tookOver := false
	fingerprint := p.Fingerprint
	var steps []byte // a takeover keeps the record's checkpoints
	if e, ok := sh.lookup(k, now); ok {
		if e.state == backends.StatePending && e.owner == p.Owner {
			return backends.ClaimResult{Claimed: true, Steps: clone(e.steps)}, nil
		}
		lapsed := !now.Before(e.leaseUntil) && (e.state == backends.StatePending ||
			e.state == backends.StateHeld && !now.Before(e.holdUntil))
		takeover := lapsed && backends.FingerprintMatches(e.fingerprint, p.Fingerprint)
		if !takeover {
			return backends.ClaimResult{Existing: view(e, now)}, nil
		}
		tookOver = true
		fingerprint = backends.BoundFingerprint(e.fingerprint, p.Fingerprint)
		steps = e.steps
	}
	leaseUntil := after(now, p.Lease)
	sh.put(k, entry{
		state:       backends.StatePending,
		fingerprint: clone(fingerprint),
		owner:       p.Owner,
		leaseUntil:  leaseUntil,
		expiresAt:   latest(after(now, p.Retention), leaseUntil),
		since:       now,
		steps:       steps,
	}, now)
	return backends.ClaimResult{Claimed: true, TookOver: tookOver, Steps: clone(steps)}, nil
}

// after returns now+d for a positive d, saturating at the largest time a
// time.Time can hold, and now+1ns for a non-positive d (the smallest
// positive duration, never "forever").
func after(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		d = 1
	}
	t := now.Add(d)
	if t.Before(now) {
		return maxTime
	}
	return t
}

// maxTime is later than any deadline a duration can reach.
var maxTime = time.Unix(1<<62, 0)

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// owned returns the live pending record of k if owner holds it. The caller
// holds sh.mu.
func (sh *shard) owned(k recordKey, owner string, now time.Time) (entry, bool) {
	e, ok := sh.lookup(k, now)
	if !ok || e.state != backends.StatePending || e.owner != owner {
		return entry{}, false
	}
	return e, true
}

// Complete implements backends.Store.
func (s *Store) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkWrite("complete", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	k := recordKey{p.Scope, p.Key}
	sh := s.shardFor(p.Scope, p.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	if e, ok := sh.lookup(k, now); ok && e.state == backends.StateCompleted {
		// A repeated Complete by the owner that completed it.
		return e.owner == p.Owner && bytes.Equal(e.outcome, p.Outcome), nil
	}
	e, ok := sh.owned(k, p.Owner, now)
	if !ok {
		return false, nil
	}
	e.state = backends.StateCompleted
	e.outcome = clone(p.Outcome)
	e.expiresAt = after(now, p.Retention)
	sh.put(k, e, now)
	return true, nil
}

// Renew implements backends.Store.
func (s *Store) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkWrite("renew", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	k := recordKey{p.Scope, p.Key}
	sh := s.shardFor(p.Scope, p.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	e, ok := sh.owned(k, p.Owner, now)
	if !ok {
		return false, nil
	}
	e.leaseUntil = after(now, p.Lease)
	e.expiresAt = latest(e.expiresAt, e.leaseUntil)
	sh.records[k] = e
	return true, nil
}

// Release implements backends.Store.
func (s *Store) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkWrite("release", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	k := recordKey{p.Scope, p.Key}
	sh := s.shardFor(p.Scope, p.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	e, ok := sh.owned(k, p.Owner, now)
	if !ok {
		return false, nil
	}
	if e.steps == nil {
		sh.remove(k)
		return true, nil
	}
	e.leaseUntil = now // kept for its checkpoints, claimable at once
	sh.put(k, e, now)
	return true, nil
}

// Checkpoint implements backends.Store.
func (s *Store) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkWrite("checkpoint", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	k := recordKey{p.Scope, p.Key}
	sh := s.shardFor(p.Scope, p.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.owned(k, p.Owner, s.now())
	if !ok {
		return false, nil
	}
	e.steps = nil
	if len(p.Steps) > 0 {
		e.steps = clone(p.Steps)
	}
	sh.records[k] = e
	return true, nil
}

// Resolve implements backends.Store.
func (s *Store) Resolve(ctx context.Context, p backends.ResolveParams) (backends.ResolveResult, error) {
	if err := ctx.Err(); err != nil {
		return backends.ResolveResult{}, err
	}
	if err := checkWrite("resolve", p.Scope, p.Key, p.Owner, p.Fingerprint); err != nil {
		return backends.ResolveResult{}, err
	}
	k := recordKey{p.Scope, p.Key}
	sh := s.shardFor(p.Scope, p.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	fingerprint := p.Fingerprint
	var steps []byte // the checkpoints of a record resolved
	if e, ok := sh.lookup(k, now); ok {
		if e.state == backends.StateCompleted {
			// A re-send of this very Resolve reports what the first did.
			resent := p.Owner != "" && e.owner == p.Owner && bytes.Equal(e.outcome, p.Outcome)
			if resent {
				return backends.ResolveResult{Resolved: true}, nil
			}
			return backends.ResolveResult{Existing: view(e, now)}, nil
		}
		if !backends.FingerprintMatches(e.fingerprint, p.Fingerprint) {
			return backends.ResolveResult{Existing: view(e, now)}, nil
		}
		if e.state == backends.StateHeld && now.Before(e.leaseUntil) && e.owner != p.Owner {
			// Another reconciler's lease is live: it resolves this key.
			return backends.ResolveResult{Existing: view(e, now)}, nil
		}
		if p.OnlyLeased && !e.leasedBy(p.Owner) {
			// Not a held record this token leased: another intent's, a
			// takeover's claim, or a hold nobody leased.
			return backends.ResolveResult{Existing: view(e, now)}, nil
		}
		if e.state == backends.StatePending && now.Before(e.leaseUntil) {
			// Its owner is running now.
			return backends.ResolveResult{Existing: view(e, now)}, nil
		}
		fingerprint = backends.BoundFingerprint(e.fingerprint, p.Fingerprint)
		steps = e.steps
	} else if p.OnlyLeased {
		return backends.ResolveResult{}, nil // absent: the next intent's key
	}
	sh.put(k, entry{
		state:       backends.StateCompleted,
		fingerprint: clone(fingerprint),
		owner:       p.Owner,
		outcome:     clone(p.Outcome),
		expiresAt:   after(now, p.Retention),
		steps:       steps,
	}, now)
	return backends.ResolveResult{Resolved: true}, nil
}

// Watch implements backends.Watcher.
func (s *Store) Watch(ctx context.Context, scope, key string) (<-chan struct{}, func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if err := checkNames("watch", scope, key); err != nil {
		return nil, nil, err
	}
	k := recordKey{scope, key}
	sh := s.shardFor(scope, key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	ch, ok := sh.watchers[k]
	if !ok {
		ch = make(chan struct{})
		sh.watchers[k] = ch
	}
	return ch, func() {}, nil
}

// Sweep removes every expired record now and returns how many it removed.
// Calling it is optional: expired records are invisible as soon as they
// expire and are swept as writes happen. It stops early when ctx ends,
// returning the count so far with ctx's error.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	var removed int64
	for i := range s.shards {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		removed += int64(sh.sweep(s.now()))
		sh.mu.Unlock()
	}
	return removed, nil
}

// Len returns the number of records held, including expired ones not yet
// swept.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.records)
		sh.mu.Unlock()
	}
	return n
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// clone2 returns copies of a and b in one allocation, each capped at its
// length so that neither reaches into the other (an append to one
// reallocates). A nil slice stays nil.
func clone2(a, b []byte) ([]byte, []byte) {
	if a == nil || b == nil {
		return clone(a), clone(b)
	}
	buf := make([]byte, len(a)+len(b))
	n := copy(buf, a)
	copy(buf[n:], b)
	return buf[:n:n], buf[n:]
}
