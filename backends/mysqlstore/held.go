package mysqlstore

import (
	"context"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// The statements of the held state. A held row has state
// 3; its owner and lease_until are a reconciler's token and lease
// (lease_until is the hold's start until one leases it). Complete, Renew
// and Release require state 1, so a held owner's writes match nothing.
const (
	// holdSQL: hold µs, code, message, retention µs, hold µs, scope, key,
	// owner. A live pending row of the owner (its lease may have lapsed)
	// becomes held, living until the later of the hold's end and the
	// retention. Assignments read only parameters and the server's clock.
	holdSQL = "UPDATE `once_records` SET\n" +
		"\tstate = 3, held_at = UTC_TIMESTAMP(6),\n" +
		"\thold_until = COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "),\n" +
		"\theld_code = ?, held_message = ?, lease_until = UTC_TIMESTAMP(6),\n" +
		"\texpires_at = GREATEST(COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "),\n" +
		"\t\tCOALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + ")),\n" +
		"\trevision = revision + 1\n" +
		"WHERE scope = ? AND `key` = ? AND owner = ? AND state = 1 AND expires_at > UTC_TIMESTAMP(6)"

	// heldBySQL: scope, key, owner. It tells a re-sent Hold (the reply of
	// the first was lost) from a refused one.
	heldBySQL = "SELECT 1 FROM `once_records`\n" +
		"WHERE scope = ? AND `key` = ? AND owner = ? AND state = 3 AND expires_at > UTC_TIMESTAMP(6)"

	// leaseHeldSQL: owner, lease µs, lease µs, scope, key, owner. A live
	// held row with no live reconciler lease, or one of this owner, gets
	// the lease; it lives at least until the lease ends.
	leaseHeldSQL = "UPDATE `once_records` SET\n" +
		"\towner = ?, lease_until = COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + "),\n" +
		"\texpires_at = GREATEST(expires_at, COALESCE(UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, " + maxDatetime + ")),\n" +
		"\trevision = revision + 1\n" +
		"WHERE scope = ? AND `key` = ? AND state = 3 AND expires_at > UTC_TIMESTAMP(6)\n" +
		"\tAND (lease_until <= UTC_TIMESTAMP(6) OR owner = ?)"
)

// Hold implements backends.Store in one UPDATE; a Hold that changed
// nothing costs one more SELECT to tell a re-send (true) from a refusal.
func (s *Store) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	return s.pool().hold(ctx, p)
}

// LeaseHeld implements backends.Store in one UPDATE; a refusal costs one
// more SELECT to report the record. When that read finds a held record
// with no live reconciler lease (the lease that refused the UPDATE ended
// in between), LeaseHeld runs again, so that it does not report a record
// it could have leased: at most four times in all (leaseHeldAttempts). If
// the fourth run is refused too, it reports the record that run read, even
// a held one with no live lease, having leased nothing (a Reconciler
// counts the key Busy and asks it on a later pass).
func (s *Store) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return s.pool().leaseHeld(ctx, p)
}

// Hold implements backends.Store inside the transaction.
func (t *txStore) Hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	return t.r.hold(ctx, p)
}

// LeaseHeld implements backends.Store inside the transaction.
func (t *txStore) LeaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	return t.r.leaseHeld(ctx, p)
}

func (r runner) hold(ctx context.Context, p backends.HoldParams) (bool, error) {
	const op = "hold"
	if err := checkInput(op, p.Scope, p.Key, nil, p.Owner, true); err != nil {
		return false, err
	}
	if field, r := backends.HeldProblem(p.Code, p.Message); r != "" {
		return false, &InputError{Op: op, Field: field, Reason: r}
	}
	hold := sqlstore.Micros(p.For)
	n, err := r.exec(ctx, op, r.s.sql.hold,
		hold, p.Code, p.Message, sqlstore.Micros(p.Retention), hold, p.Scope, p.Key, p.Owner)
	if err != nil || n == 1 {
		return n == 1, err
	}
	var one int
	return r.queryRow(ctx, op, r.s.sql.heldBy, []any{&one}, p.Scope, p.Key, p.Owner)
}

func (r runner) leaseHeld(ctx context.Context, p backends.LeaseHeldParams) (backends.LeaseHeldResult, error) {
	const op = "leaseheld"
	if err := checkInput(op, p.Scope, p.Key, nil, p.Owner, true); err != nil {
		return backends.LeaseHeldResult{}, err
	}
	lease := sqlstore.Micros(p.Lease)
	for attempt := 1; ; attempt++ {
		n, err := r.exec(ctx, op, r.s.sql.leaseHeld, p.Owner, lease, lease, p.Scope, p.Key, p.Owner)
		if err != nil || n == 1 {
			return backends.LeaseHeldResult{Leased: n == 1}, err
		}
		rec, err := r.get(ctx, op, p.Scope, p.Key)
		rec.Steps = nil // only Admin.Get reports them
		if err != nil || rec.State != backends.StateHeld || rec.LeaseRemaining > 0 || attempt == leaseHeldAttempts {
			return backends.LeaseHeldResult{Existing: rec}, err
		}
	}
}

// leaseHeldAttempts bounds the runs of a LeaseHeld whose report finds the
// lease that refused it already ended.
const leaseHeldAttempts = 4
