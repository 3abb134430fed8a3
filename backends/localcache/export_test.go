package localcache

import "github.com/stagedoor/once/backends"

// base returns the cache behind s, a store New returned.
func base(s backends.Store) *cache {
	switch c := s.(type) {
	case *cache:
		return c
	case adminCache:
		return c.cache
	}
	panic("localcache: not a store New returned")
}

// Stats reports the entries and bytes of the records cached in s.
func Stats(s backends.Store) (entries, bytes int) { return base(s).records.stats() }

// Joined reports how many Claims joined a Claim in flight.
func Joined(s backends.Store) int64 { return base(s).joined.Load() }

// Owned reports how many won claims s remembers, and their bytes.
func Owned(s backends.Store) (entries, bytes int) {
	c := base(s)
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.owned), c.ownedBytes
}
