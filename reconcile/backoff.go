package reconcile

import "time"

// Bounds of a Job's backoff of the keys a store write failed for
// (see Report.Skipped).
const (
	// backoffMin is how long a Job leaves a key alone
	// after a first store failure on it; each further consecutive failure
	// doubles it, up to backoffMax.
	backoffMin = time.Second
	backoffMax = time.Minute
	// maxBackoffs bounds the keys one Job remembers a
	// failure of. To make room for one more it forgets, of the keys whose
	// lease it ended, the one whose backoff ends first. Keys whose lease
	// may still be its own are all kept, beyond maxBackoffs (up
	// to maxKeptLeases); when only such keys are remembered, a
	// new key whose lease it did end is not remembered (not backed off).
	maxBackoffs = 256
	// maxKeptLeases bounds the keys one Job remembers,
	// those whose lease may still be its own included: it keeps their
	// lease's owner, so that its next attempt takes the lease back, and
	// forgets one only when it remembers maxKeptLeases keys, all
	// of them such keys. Then, to make room, it ends the lease of the one
	// whose backoff ends first (one LeaseHeld, detached from the pass's
	// context, as Pass ends a lease) and forgets it: if that fails too,
	// that lease lasts until Config.Lease ends, as it does when
	// the room is made after a store panic (no store call is made then).
	maxKeptLeases = 1024
)

// heldID names a held key.
type heldID struct{ scope, key string }

// backoff is what a Job remembers of a key a store write failed
// for.
type backoff struct {
	// token is the owner of the lease taken for the key, reused by the
	// next attempt: if ending that lease failed too, the lease is still
	// this Job's, and the next LeaseHeld extends it rather than
	// finding the key busy.
	token    string
	failures int       // consecutive
	until    time.Time // the key is skipped before then
	// live reports that the lease may still be this Job's: ending
	// it failed, the store panicked, or the outcome of the LeaseHeld that
	// took it is unknown (its reply was lost, or the pass's context cut it
	// off in flight, and it may apply after the lease was ended).
	live bool
}

// backoffs are a Job's remembered failures: at most
// maxBackoffs of them, or maxKeptLeases when the extra
// ones are live.
type backoffs map[heldID]backoff

// failed records a store failure of id under token at now (live as in
// backoff), backing the key off when delay (not when the failure came with
// the end of the pass's context: the next pass attempts the key at once).
// A new entry may need room (see makeRoom): when there is none, failed
// records nothing; when the entry it forgot for it may hold a lease of
// this Job, it returns that entry (end) for the caller to end it.
func (b backoffs) failed(id heldID, token string, now time.Time, live, delay bool) (gone heldID, goneEntry backoff, end bool) {
	e, found := b[id]
	if !found {
		var room bool
		if room, gone, goneEntry, end = b.makeRoom(live); !room {
			return heldID{}, backoff{}, false
		}
	}
	e.token = token
	e.live = live
	if delay {
		e.failures = min(e.failures+1, 32) // 1 s << 31 is past the cap already
		e.until = now.Add(backoffAfter(e.failures))
	} else {
		e.until = time.Time{}
	}
	b[id] = e
	return gone, goneEntry, end
}

// makeRoom makes room for a new entry (live as in backoff) once b has
// maxBackoffs entries: it forgets the entry that is not live
// whose backoff ends first. When all are live, there is no room for a new
// entry that is not live; a live one is added, up to
// maxKeptLeases entries, and beyond that it takes the place of
// the live entry whose backoff ends first, which makeRoom forgets and
// returns (end).
func (b backoffs) makeRoom(live bool) (room bool, gone heldID, goneEntry backoff, end bool) {
	if len(b) < maxBackoffs {
		return true, heldID{}, backoff{}, false
	}
	if id, _, found := b.first(false); found {
		delete(b, id)
		return true, heldID{}, backoff{}, false
	}
	if !live {
		return false, heldID{}, backoff{}, false
	}
	if len(b) < maxKeptLeases {
		return true, heldID{}, backoff{}, false
	}
	id, e, _ := b.first(true)
	delete(b, id)
	return true, id, e, true
}

// first returns the entry of b, live or not as asked, whose backoff ends
// first: the key that is due soonest anyway, or one a Pass no longer lists
// (settled meanwhile).
func (b backoffs) first(live bool) (heldID, backoff, bool) {
	var first heldID
	var entry backoff
	found := false
	for id, e := range b {
		if e.live == live && (!found || e.until.Before(entry.until)) {
			first, entry, found = id, e, true
		}
	}
	return first, entry, found
}

// backoffAfter is the backoff after n consecutive failures: doubling from
// backoffMin, at most backoffMax.
func backoffAfter(n int) time.Duration {
	d := backoffMin
	for i := 1; i < n && d < backoffMax; i++ {
		d *= 2
	}
	return min(d, backoffMax)
}
