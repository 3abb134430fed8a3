package postgres

import (
	"context"
	"strings"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
	"github.com/stagedoor/once/internal/pgsql"
)

// Hold implements backends.Store in one statement. The held row enters
// the partial index on held_at, which only held rows are
// in: the hot path never writes it. The statement wakes the key's waiters
// (see Watch) when it changed the record, as Complete does.
func (s *Store) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	return s.hold(ctx, s.db, p)
}

// Hold implements backends.Store inside the transaction, as Store.Hold.
func (t *txStore) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	return t.s.hold(ctx, t.tx, p)
}

func (s *Store) hold(ctx context.Context, q querier, p backends.HoldParams) (bool, error) {
	if err := checkInput("hold", p.Scope, p.Key, nil, p.Owner); err != nil {
		return false, err
	}
	if field, r := backends.HeldProblem(p.Code, p.Message); r != "" {
		return false, invalidInput("hold", strings.ToLower(field)+" "+r)
	}
	var ok bool
	_, err := interpretError("hold", q.QueryRow(ctx, s.sql.Hold,
		p.Scope, p.Key, p.Owner, sqlstore.Micros(p.For), p.Code, p.Message, sqlstore.Micros(p.Retention), pgsql.Slot(p.Scope, p.Key)).Scan(&ok))
	return ok, err
}

// LeaseHeld implements backends.Store in one statement, and one more
// (Get) to report the record when it did not apply. When that read finds
// a held record with no live reconciler lease (the lease that refused
// the statement ended in between), LeaseHeld runs again, so that it does
// not report a record it could have leased: at most four times in all
// (maxAttempts). If the fourth run is refused too, it reports the record
// that run read, even a held one with no live lease, having leased
// nothing (a Reconciler counts the key Busy and asks it on a later pass).
func (s *Store) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return s.leaseHeld(ctx, s.db, p)
}

// LeaseHeld implements backends.Store inside the transaction, as
// Store.LeaseHeld.
func (t *txStore) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return t.s.leaseHeld(ctx, t.tx, p)
}

func (s *Store) leaseHeld(ctx context.Context, q querier, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	if err := checkInput("leaseheld", p.Scope, p.Key, nil, p.Owner); err != nil {
		return backends.LeaseHeldResult{}, err
	}
	for attempt := 1; ; attempt++ {
		var ok bool
		found, err := interpretError("leaseheld", q.QueryRow(ctx, s.sql.LeaseHeld,
			p.Scope, p.Key, p.Owner, sqlstore.Micros(p.Lease)).Scan(&ok))
		if err != nil {
			return backends.LeaseHeldResult{}, err
		}
		if found && ok {
			return backends.LeaseHeldResult{Leased: true}, nil
		}
		rec, err := s.get(ctx, q, p.Scope, p.Key, false)
		if err != nil || rec.State != backends.StateHeld || rec.LeaseRemaining > 0 || attempt == maxAttempts {
			return backends.LeaseHeldResult{Existing: rec}, err
		}
	}
}
