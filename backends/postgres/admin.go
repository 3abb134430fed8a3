package postgres

import (
	"context"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

var _ backends.Admin = (*Store)(nil)

// Get implements backends.Admin in one SELECT that takes no row lock and
// writes nothing; it is not blocked by a transaction holding the row.
// Lease and expiry are measured on the server's clock_timestamp(). It is
// the one method that reports the record's checkpoints (Record.Steps).
func (s *Store) Get(ctx context.Context, scope, key string) (backends.Record, error) {
	if err := checkNames("get", scope, key); err != nil {
		return backends.Record{}, err
	}
	return s.get(ctx, s.db, scope, key, true)
}

// get reads the live record of (scope, key) on q, with its checkpoints
// only when withSteps (Admin.Get): every other caller reports a Record
// without them, and reads no blob.
func (s *Store) get(ctx context.Context, q querier, scope, key string, withSteps bool) (backends.Record, error) {
	var (
		state                            int16
		fp, outcome                      []byte
		leaseUS, expireUS, ageUS, holdUS int64
		code, message                    string
		steps                            []byte
	)
	err := q.QueryRow(ctx, s.sql.Get, scope, key, withSteps).
		Scan(&state, &fp, &outcome, &leaseUS, &expireUS, &ageUS, &holdUS, &code, &message, &steps)
	found, err := interpretError("get", err)
	if !found || err != nil {
		return backends.Record{}, err
	}
	rec := existing(state, fp, outcome, sqlstore.FromMicros(leaseUS))
	withDetails(&rec, ageUS, holdUS, code, message)
	rec.ExpiresIn = sqlstore.FromMicros(expireUS)
	rec.Steps = stepsOrNil(steps)
	return rec, nil
}

// withDetails sets the age of a pending or held record and a held
// record's hold. The age is never negative: get.sql, list.sql and
// list_held.sql report the server's clock_timestamp() minus claimed_at (or
// held_at), which is negative for a row stamped by a server whose clock
// was ahead (a step back of the clock, or another server writing the
// row), and such a record is as young as can be, 0. Clamping here costs
// the hot statements nothing.
func withDetails(rec *backends.Record, ageUS, holdUS int64, code, message string) {
	if rec.State == backends.StateCompleted {
		return
	}
	rec.Age = max(sqlstore.FromMicros(ageUS), 0)
	if rec.State == backends.StateHeld {
		rec.Held = backends.HeldInfo{Remaining: sqlstore.FromMicros(holdUS), Code: code, Message: message}
	}
}

// heldDetails replaces rec, a held record a Claim or Resolve reported,
// with the record Get reads (hold, code, message, age). It reports false,
// leaving rec as it is, when Get finds no held record: the record
// changed (it expired, or was resolved or taken over) after the statement
// that reported it, and the caller decides again.
func (s *Store) heldDetails(ctx context.Context, q querier, scope, key string, rec *backends.Record) (bool, error) {
	full, err := s.get(ctx, q, scope, key, false)
	if err != nil || full.State != backends.StateHeld {
		return false, err
	}
	*rec = full
	return true, nil
}

// Delete implements backends.Admin in one DELETE of the row, whatever its
// state or owner; an expired row is deleted too but reported as absent. A
// pending owner's later Complete, Renew and Release match no row of theirs
// and report false. It waits for a transaction that holds the row (a
// claim made through InTx) to end.
func (s *Store) Delete(ctx context.Context, scope, key string) (bool, error) {
	if err := checkNames("delete", scope, key); err != nil {
		return false, err
	}
	var live bool
	err := s.db.QueryRow(ctx, s.sql.Delete, scope, key).Scan(&live)
	found, err := interpretError("delete", err)
	return found && live, err
}
