// Package localcache puts a bounded in-process cache in front of a
// backends.Store, so that a replay of a hot key answers from memory,
// without a store round trip, and concurrent duplicates of one key in this
// process make one store call between them. It is a decorator: give the
// store it returns to once.New in place of the store it wraps.
//
//	cached, err := localcache.New(store, &localcache.Config{MaxEntries: 10_000})
//	if err != nil {
//		return err
//	}
//	keeper := once.New(cached)
//
// # What it serves
//
// Only completed records, which never change in the store except by
// deletion or expiry. A Claim of a key whose completed record is cached
// reports that record, as the store would, without a store call; the
// caller checks the fingerprint on it exactly as on a store's answer (the
// core uses the symmetric constant-time rule, backends.FingerprintMatches),
// so a call with another fingerprint gets once.ErrKeyReused and never the
// cached outcome. Pending and held records are never cached, and a call
// inside a transaction uses the transaction's store, never this one.
//
// The cache fills itself from what passes through it: a completed record
// a Claim reports, and the outcome of a claim won through it that a
// Complete stores (it remembers each won claim's owner token and
// fingerprint until the claim is completed, released, held or lost).
//
// Concurrent Claims of one key with one fingerprint share one store Claim:
// the others get what the store would have told them right after it (the
// completed record, or the pending claim of the one that won it). When
// that Claim fails, they share one more.
//
// # How long
//
// A record completed through the cache is cached from the moment its
// Complete was sent for min(TTL, retention), so it never outlives the
// record in the store. A record a Claim reports is cached for min(TTL,
// retention, the time the record has left) from before the Claim was
// sent, the last as the store reports it by its clock
// (backends.Record.ExpiresIn), so it never outlives the record
// either. With a store that does not report the time left (zero: a
// third-party store), such an entry is cached for min(TTL, retention) and
// may outlive the store's record by up to that time.
//
// # What it can serve stale
//
// The cache cannot see a deletion made elsewhere: after an operator
// deletes a completed record through another store value (the once CLI,
// another process), or a store that does not report the time left expires
// a record, this process can keep answering from the old record for up to
// TTL: replaying its outcome, or ErrKeyReused to another fingerprint,
// where the store would let fn run again. A Delete through the cached
// store (backends.Admin) drops the entry at once. A Resolve never changes
// a completed record, so it makes nothing stale. A caller that joins
// another caller's Claim in flight gets the answer of that Claim, which
// reflects the record as it was at most one store round trip before the
// caller arrived.
package localcache
