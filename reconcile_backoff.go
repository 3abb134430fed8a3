package once

import "time"

// Bounds of a Reconciler's backoff of the keys a store write failed for
// (see ReconcileReport.Skipped).
const (
	// ReconcileBackoffMin is how long a Reconciler leaves a key alone
	// after a first store failure on it; each further consecutive failure
	// doubles it, up to ReconcileBackoffMax.
	ReconcileBackoffMin = time.Second
	ReconcileBackoffMax = time.Minute
	// MaxReconcileBackoffs bounds the keys one Reconciler remembers a
	// failure of; to make room it forgets the one whose backoff ends
	// first.
	MaxReconcileBackoffs = 256
)

// heldID names a held key.
type heldID struct{ scope, key string }

// backoff is what a Reconciler remembers of a key a store write failed
// for.
type backoff struct {
	// token is the owner of the lease taken for the key, reused by the
	// next attempt: if ending that lease failed too, the lease is still
	// this Reconciler's, and the next LeaseHeld extends it rather than
	// finding the key busy.
	token    string
	failures int       // consecutive
	until    time.Time // the key is skipped before then
}

// backoffs are a Reconciler's remembered failures, at most
// MaxReconcileBackoffs of them.
type backoffs map[heldID]backoff

// failed records a store failure of id under token at now, and returns
// the key's backoff.
func (b backoffs) failed(id heldID, token string, now time.Time) backoff {
	e, ok := b[id]
	if !ok && len(b) >= MaxReconcileBackoffs {
		b.evict()
	}
	e.token = token
	e.failures = min(e.failures+1, 32) // 1 s << 31 is past the cap already
	e.until = now.Add(backoffAfter(e.failures))
	b[id] = e
	return e
}

// backoffAfter is the backoff after n consecutive failures: doubling from
// ReconcileBackoffMin, at most ReconcileBackoffMax.
func backoffAfter(n int) time.Duration {
	d := ReconcileBackoffMin
	for i := 1; i < n && d < ReconcileBackoffMax; i++ {
		d *= 2
	}
	return min(d, ReconcileBackoffMax)
}

// evict forgets the entry whose backoff ends first: the key that is due
// soonest anyway, or one a Pass no longer lists (settled meanwhile).
func (b backoffs) evict() {
	var first heldID
	var until time.Time
	found := false
	for id, e := range b {
		if !found || e.until.Before(until) {
			first, until, found = id, e.until, true
		}
	}
	delete(b, first)
}
