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
