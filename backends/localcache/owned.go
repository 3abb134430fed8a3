package localcache

import "time"

// ownedClaim is a claim won through the cache: its owner token and, when
// known, the fingerprint the record holds, so that its completion can be
// cached.
type ownedClaim struct {
	owner   string
	fp      []byte
	fpKnown bool
	// expires is the end of the claim's first lease: an entry left past
	// it (a claim whose owner never settled it) may be dropped to make
	// room.
	expires time.Time
	// size is what the entry counts toward maxOwnedBytes.
	size int
}

// ownedSweep bounds the entries own examines for expired ones when owned
// is full, so that a claim never scans the whole map under c.mu.
const ownedSweep = 8

// own remembers a won claim, keeping owned within maxOwnedBytes. A claim
// of an owner already remembered for the key is a re-send (a store
// reports Claimed to its owner again), which changed nothing in the store:
// the remembered claim stays as it is, with the fingerprint the first
// Claim stored. When the claim does not fit, it drops up to ownedSweep of the claims whose first
// lease has passed (an entry a claim left that was never settled through
// the cache), and if the claim still does not fit it forgets the new one
// (its completion is then simply not cached).
func (c *cache) own(k cacheKey, oc ownedClaim) {
	oc.size = entryOverhead + len(k.scope) + len(k.key) + len(oc.fp) + len(oc.owner)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.owned[k]; ok {
		if old.owner == oc.owner {
			return
		}
		c.dropOwnedLocked(k, old)
	}
	if c.ownedBytes+oc.size > c.maxOwnedBytes {
		now, seen := c.now(), 0
		for key, old := range c.owned {
			if seen++; seen > ownedSweep {
				break
			}
			if !now.Before(old.expires) {
				c.dropOwnedLocked(key, old)
			}
		}
		if c.ownedBytes+oc.size > c.maxOwnedBytes {
			return
		}
	}
	c.owned[k] = oc
	c.ownedBytes += oc.size
}

func (c *cache) dropOwnedLocked(k cacheKey, oc ownedClaim) {
	delete(c.owned, k)
	c.ownedBytes -= oc.size
}

// settle forgets the claim of k by owner, if remembered, and returns it:
// the claim has settled (completed, released, held or lost), so no
// completion of it is to be cached any more.
func (c *cache) settle(k cacheKey, owner string) (ownedClaim, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	oc, ok := c.owned[k]
	if !ok || oc.owner != owner {
		return ownedClaim{}, false
	}
	c.dropOwnedLocked(k, oc)
	return oc, true
}
