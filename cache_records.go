package once

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stagedoor/once/backends"
)

// cacheEntryOverhead is the fixed cost charged to every cached record on
// top of its variable-length fields: the entry, its map slot and ring slot.
const cacheEntryOverhead = 160

type cacheKey struct{ scope, key string }

type cacheEntry struct {
	key     cacheKey
	rec     backends.Record
	expires time.Time
	size    int
	slot    int
	// ref is the CLOCK reference bit: set by every hit, cleared by the
	// eviction hand, so hits need only the read lock.
	ref atomic.Bool
}

// recordCache is a bounded map of completed records with CLOCK (second
// chance) eviction: at most maxEntries entries and maxBytes bytes. Expired
// entries are never returned and are evicted first when the hand finds
// them. Every operation costs O(1) amortized; an eviction sweeps at most
// twice around the ring.
type recordCache struct {
	mu         sync.RWMutex
	entries    map[cacheKey]*cacheEntry
	ring       []*cacheEntry // nil marks a free slot
	free       []int
	hand       int
	bytes      int
	maxEntries int
	maxBytes   int
}

func newRecordCache(maxEntries, maxBytes int) *recordCache {
	return &recordCache{entries: make(map[cacheKey]*cacheEntry), maxEntries: maxEntries, maxBytes: maxBytes}
}

func entrySize(k cacheKey, rec backends.Record) int {
	return cacheEntryOverhead + len(k.scope) + len(k.key) + len(rec.Fingerprint) + len(rec.Outcome)
}

// lookup returns the live entry cached for k, or nil. The entry's record
// is never modified once cached (put stores a new entry), so the caller
// may read it without the lock, but must not modify its bytes or hand
// them to code that may.
func (c *recordCache) lookup(k cacheKey, now time.Time) *cacheEntry {
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
// replacing any entry for k and evicting others as the bounds require. A
// record larger than maxBytes, or already expired, is not cached.
func (c *recordCache) put(k cacheKey, rec backends.Record, expires, now time.Time) {
	size := entrySize(k, rec)
	if size > c.maxBytes || !expires.After(now) {
		return
	}
	e := &cacheEntry{
		key: k, expires: expires, size: size,
		rec: backends.Record{State: backends.StateCompleted, Fingerprint: bytes.Clone(rec.Fingerprint), Outcome: bytes.Clone(rec.Outcome)},
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.entries[k]; old != nil {
		c.removeLocked(old)
	}
	for len(c.entries) >= c.maxEntries || c.bytes+size > c.maxBytes {
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

// evictLocked removes one entry: the first expired or unreferenced one
// under the hand, clearing reference bits on the way. The caller holds
// the write lock and ensures the cache is not empty.
func (c *recordCache) evictLocked(now time.Time) {
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

func (c *recordCache) removeLocked(e *cacheEntry) {
	delete(c.entries, e.key)
	c.ring[e.slot] = nil
	c.free = append(c.free, e.slot)
	c.bytes -= e.size
}

// stats returns the number of entries and bytes held.
func (c *recordCache) stats() (entries, bytes int) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries), c.bytes
}
