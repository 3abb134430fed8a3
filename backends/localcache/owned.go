package localcache

import (
	"bytes"
	"time"
)

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
// by an owner already remembered for the key is either a re-send (the
// store reports Claimed to the owner of the pending claim again, changing
// nothing: the record keeps the first Claim's fingerprint) or a new claim
// of an absent key by the same token (the record holds the new
// fingerprint): the fingerprint is known only when both agree. (The core
// draws a new token for every claim; only a direct caller reuses one.)
// When the claim does not fit, it drops up to ownedSweep of the claims whose first
// lease has passed (an entry a claim left that was never settled through
// the cache), and if the claim still does not fit it forgets the new one
// (its completion is then simply not cached).
func (c *cache) own(k cacheKey, oc ownedClaim) {
	oc.size = entryOverhead + len(k.scope) + len(k.key) + len(oc.fp) + len(oc.owner)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.owned[k]; ok {
		if old.owner == oc.owner {
			oc.fpKnown = oc.fpKnown && old.fpKnown && bytes.Equal(old.fp, oc.fp)
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
