package memory

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// Hold implements backends.Store.
func (s *Store) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkWrite("hold", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	if field, r := backends.HeldProblem(p.Code, p.Message); r != "" {
		return false, &InputError{Op: "hold", Field: field, Reason: r}
	}
	k := recordKey{p.Scope, p.Key}
	sh := s.shardFor(p.Scope, p.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	e, ok := sh.lookup(k, now)
	if !ok || e.owner != p.Owner {
		return false, nil
	}
	switch e.state {
	case backends.StateHeld:
		return true, nil // a re-send
	case backends.StatePending:
	default:
		return false, nil
	}
	e.state = backends.StateHeld
	e.since = now
	e.leaseUntil = now
	e.holdUntil = after(now, p.For)
	e.code, e.message = p.Code, p.Message
	e.expiresAt = latest(after(now, p.Retention), e.holdUntil)
	sh.put(k, e, now)
	return true, nil
}

// LeaseHeld implements backends.Store.
func (s *Store) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	if err := ctx.Err(); err != nil {
		return backends.LeaseHeldResult{}, err
	}
	if err := checkWrite("leaseheld", p.Scope, p.Key, p.Owner, nil); err != nil {
		return backends.LeaseHeldResult{}, err
	}
	k := recordKey{p.Scope, p.Key}
	sh := s.shardFor(p.Scope, p.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	e, ok := sh.lookup(k, now)
	if !ok {
		return backends.LeaseHeldResult{}, nil
	}
	if e.state != backends.StateHeld || now.Before(e.leaseUntil) && e.owner != p.Owner {
		return backends.LeaseHeldResult{Existing: view(e, now)}, nil
	}
	e.owner = p.Owner
	e.leaseUntil = after(now, p.Lease)
	e.expiresAt = latest(e.expiresAt, e.leaseUntil)
	sh.records[k] = e
	return backends.LeaseHeldResult{Leased: true}, nil
}

// leasedBy reports whether e is a held record that owner (non-empty)
// leased with LeaseHeld. Hold leaves no lease (its lease ends the moment
// the hold starts); every LeaseHeld sets one that ends after it.
func (e entry) leasedBy(owner string) bool {
	return e.state == backends.StateHeld && owner != "" && e.owner == owner && e.leaseUntil.After(e.since)
}
