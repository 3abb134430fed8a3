package localcache

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"time"

	"github.com/stagedoor/once/backends"
)

// flight is one store Claim that concurrent duplicates with the same
// fingerprint wait for instead of sending their own.
type flight struct {
	fp    []byte
	lease time.Duration
	done  chan struct{}
	// Set by the leader before done is closed.
	res backends.ClaimResult
	err error
	at  time.Time
	// next, set under cache.mu once done is closed and the leader got no
	// answer, is the flight the duplicates that joined this one wait for
	// next.
	next *flight
}

// errFlightAborted is the result of a flight whose leader never got an
// answer (its Claim panicked); followers then call the store themselves.
var errFlightAborted = errors.New("localcache: claim in flight aborted")

// claim joins a claim in flight for the same key and fingerprint, or sends
// the Claim and shares its result with the duplicates that joined it. Its
// caller just missed the cached records.
//
// When the leader of the flight it joined got no answer (its Claim
// failed, its context ended, or it panicked), the duplicates that joined
// it share one next flight (flight.next): the first of them to wake leads
// it, or they all join the flight a newcomer leads meanwhile, so a failed
// claim costs one store call more, never one per duplicate (a store that
// just timed out is the one least able to take a burst).
func (c *cache) claim(ctx context.Context, p backends.ClaimParams, k cacheKey) (backends.ClaimResult, error) {
	c.mu.Lock()
	f := c.flights[k]
	if f == nil {
		f = &flight{fp: clone(p.Fingerprint), lease: p.Lease, done: make(chan struct{}), err: errFlightAborted}
		c.flights[k] = f
		c.mu.Unlock()
		return c.lead(ctx, p, k, f)
	}
	c.mu.Unlock()
	if subtle.ConstantTimeCompare(f.fp, p.Fingerprint) != 1 {
		return c.send(ctx, p, k)
	}
	c.joined.Add(1)
	for {
		select {
		case <-f.done:
		case <-ctx.Done():
			return backends.ClaimResult{}, ctx.Err()
		}
		if res, ok := f.followerResult(c.now()); ok {
			return res, nil
		}
		if err := ctx.Err(); err != nil {
			return backends.ClaimResult{}, err
		}
		// The leader got no answer, and its flight is out of the map (it
		// leaves before done is closed): join or lead f's next flight.
		c.mu.Lock()
		if f.next == nil {
			if cur := c.flights[k]; cur != nil && subtle.ConstantTimeCompare(cur.fp, f.fp) == 1 {
				f.next = cur // a newcomer leads one already
			} else {
				next := &flight{fp: f.fp, lease: p.Lease, done: make(chan struct{}), err: errFlightAborted}
				if cur == nil {
					c.flights[k] = next
				}
				f.next = next
				c.mu.Unlock()
				return c.lead(ctx, p, k, next)
			}
		}
		f = f.next
		c.mu.Unlock()
	}
}

// lead sends the Claim of flight f, shares its result with the
// duplicates that joined f, and takes f out of the map before it closes
// f.done.
func (c *cache) lead(ctx context.Context, p backends.ClaimParams, k cacheKey, f *flight) (backends.ClaimResult, error) {
	defer func() {
		c.mu.Lock()
		if c.flights[k] == f {
			delete(c.flights, k)
		}
		c.mu.Unlock()
		close(f.done)
	}()
	res, err := c.send(ctx, p, k)
	f.res, f.err, f.at = res, err, c.now()
	// The flight keeps its own bytes: the leader's are the leader's.
	f.res.Existing.Fingerprint = bytes.Clone(res.Existing.Fingerprint)
	f.res.Existing.Outcome = bytes.Clone(res.Existing.Outcome)
	return res, err
}

// followerResult is what a duplicate that joined f gets: what the store
// would have told it right after the leader's claim, in bytes of its own.
// A claim the leader won is, for the duplicate, a pending record with the
// leader's fingerprint and lease. A failed leader (its context ended, the
// store failed) gives nothing: the duplicates then share the next flight
// (see claim).
func (f *flight) followerResult(now time.Time) (backends.ClaimResult, bool) {
	if f.err != nil {
		return backends.ClaimResult{}, false
	}
	elapsed := now.Sub(f.at)
	if f.res.Claimed {
		return backends.ClaimResult{Existing: backends.Record{
			State: backends.StatePending, Fingerprint: bytes.Clone(f.fp), LeaseRemaining: f.lease - elapsed,
		}}, true
	}
	rec := f.res.Existing
	rec.Fingerprint = bytes.Clone(rec.Fingerprint)
	rec.Outcome = bytes.Clone(rec.Outcome)
	switch rec.State { // the lease and the hold ran on meanwhile
	case backends.StateHeld:
		rec.Held.Remaining -= elapsed
		fallthrough
	case backends.StatePending:
		rec.LeaseRemaining -= elapsed
		if rec.Age > 0 {
			rec.Age += elapsed
		}
	}
	return backends.ClaimResult{Existing: rec}, true
}
