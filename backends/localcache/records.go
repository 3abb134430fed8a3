package localcache

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once/backends"
)

// entryOverhead is the fixed cost charged to every cached record, and to
// every remembered claim, on top of its variable-length fields: the entry,
// its map slot and ring slot.
const entryOverhead = 160

type cacheKey struct{ scope, key string }

type entry struct {
	key         cacheKey
	fingerprint []byte
	outcome     []byte
	expires     time.Time
	size        int
	slot        int
	// ref is the CLOCK reference bit: set by every hit, cleared by the
	// eviction hand, so hits need only the read lock.
	ref atomic.Bool
}

// record is the completed record e holds, as a store reports it at now:
// in bytes of the caller's own (one allocation for both slices), with the
// time the entry has left, never more than the record has left.
func (e *entry) record(now time.Time) backends.Record {
	buf := make([]byte, len(e.fingerprint)+len(e.outcome))
	n := copy(buf, e.fingerprint)
	copy(buf[n:], e.outcome)
	rec := backends.Record{State: backends.StateCompleted, Outcome: buf[n:], ExpiresIn: e.expires.Sub(now)}
	if n > 0 { // an empty fingerprint stays nil, as a store reports it
		rec.Fingerprint = buf[:n:n]
	}
	return rec
}

// records is a bounded map of completed records with CLOCK (second
// chance) eviction: at most maxEntries entries (no count bound when zero)
// and maxBytes bytes. Expired entries are never returned and are evicted
// first when the hand finds them. Every operation costs O(1) amortized;
// an eviction sweeps at most twice around the ring.
type records struct {
	mu         sync.RWMutex
	entries    map[cacheKey]*entry
	ring       []*entry // nil marks a free slot
	free       []int
	hand       int
	bytes      int
	maxEntries int
	maxBytes   int
	// deletes counts the deletions seen (forget): a record read from the
	// store before a deletion is not cached after it (see put).
	deletes atomic.Uint64
}

func newRecords(maxEntries, maxBytes int) *records {
	return &records{entries: make(map[cacheKey]*entry), maxEntries: maxEntries, maxBytes: maxBytes}
}

// lookup returns the live entry cached for k, or nil. An entry is never
// modified once cached (put stores a new one), so the caller may read its
// bytes without the lock, but must not modify them.
func (c *records) lookup(k cacheKey, now time.Time) *entry {
	c.mu.RLock()
	e := c.entries[k]
	c.mu.RUnlock()
	if e == nil {
		return nil
	}
	if !now.Before(e.expires) {
		c.mu.Lock()
		if c.entries[k] == e {
			c.removeLocked(e)
		}
		c.mu.Unlock()
		return nil
	}
	if !e.ref.Load() { // a hit writes the shared bit only when it was clear
		e.ref.Store(true)
	}
	return e
}

// put caches a copy of the completed record rec for k until expires,
// replacing any entry for k and evicting others as the bounds require,
// unless a deletion was seen since deletes read seen (the record may be
// the deleted one). A record larger than maxBytes, or already expired, is
// not cached.
func (c *records) put(k cacheKey, rec backends.Record, expires, now time.Time, seen uint64) {
	size := entryOverhead + len(k.scope) + len(k.key) + len(rec.Fingerprint) + len(rec.Outcome)
	if size > c.maxBytes || !expires.After(now) {
		return
	}
	e := &entry{key: k, expires: expires, size: size, fingerprint: clone(rec.Fingerprint), outcome: clone(rec.Outcome)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.deletes.Load() != seen {
		return
	}
	if old := c.entries[k]; old != nil {
		c.removeLocked(old)
	}
	for c.maxEntries > 0 && len(c.entries) >= c.maxEntries || c.bytes+size > c.maxBytes {
		c.evictLocked(now)
	}
	if n := len(c.free); n > 0 {
		e.slot = c.free[n-1]
		c.free = c.free[:n-1]
		c.ring[e.slot] = e
	} else {
		e.slot = len(c.ring)
		c.ring = append(c.ring, e)
	}
	c.entries[k] = e
	c.bytes += size
}

// forget removes the entry of k, deleted from the store, and voids every
// put of a record read before now.
func (c *records) forget(k cacheKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletes.Add(1)
	if e := c.entries[k]; e != nil {
		c.removeLocked(e)
	}
}

// evictLocked removes one entry: the first expired or unreferenced one
// under the hand, clearing reference bits on the way. The caller holds
// the write lock and ensures the cache is not empty.
func (c *records) evictLocked(now time.Time) {
	for {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		e := c.ring[c.hand]
		c.hand++
		switch {
		case e == nil:
		case !now.Before(e.expires) || !e.ref.Load():
			c.removeLocked(e)
			return
		default:
			e.ref.Store(false)
		}
	}
}

func (c *records) removeLocked(e *entry) {
	delete(c.entries, e.key)
	c.ring[e.slot] = nil
	c.free = append(c.free, e.slot)
	c.bytes -= e.size
}

// stats returns the number of entries and bytes held.
func (c *records) stats() (entries, bytes int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries), c.bytes
}

// clone copies b; an empty b stays nil.
func clone(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return append([]byte(nil), b...)
}
