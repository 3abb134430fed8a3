package once

import "time"

// LocalCacheWithClock returns c with the cache's clock replaced, for tests
// that drive the store and the cache with one fake clock.
func LocalCacheWithClock(c LocalCache, now func() time.Time) LocalCache {
	c.now = now
	return c
}

// LocalCacheStats reports the entries and bytes held by the scope's cache.
func LocalCacheStats(s Scope) (entries, bytes int) {
	if s.cfg == nil || s.cfg.cache == nil {
		return 0, 0
	}
	return s.cfg.cache.records.stats()
}

// LocalCacheJoined reports how many calls joined a claim in flight.
func LocalCacheJoined(s Scope) int64 {
	if s.cfg == nil || s.cfg.cache == nil {
		return 0
	}
	return s.cfg.cache.joined.Load()
}

// LocalCacheOwned reports how many claims in flight the scope's cache
// remembers, and their bytes.
func LocalCacheOwned(s Scope) (entries, bytes int) {
	if s.cfg == nil || s.cfg.cache == nil {
		return 0, 0
	}
	lc := s.cfg.cache
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return len(lc.owned), lc.ownedBytes
}
