package mysqlstore

import (
	"context"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

var _ backends.Admin = (*Store)(nil)

// Get implements backends.Admin in one consistent read that takes no row
// lock and writes nothing; it is not blocked by a transaction holding the
// row. Lease, hold, age and expiry are measured on the server's
// UTC_TIMESTAMP(6). It reports the record's checkpoints (Record.Steps).
func (s *Store) Get(ctx context.Context, scope, key string) (backends.Record, error) {
	if err := checkInput("get", scope, key, nil, "", false); err != nil {
		return backends.Record{}, err
	}
	return s.pool().get(ctx, "get", scope, key)
}

func (r runner) get(ctx context.Context, op, scope, key string) (backends.Record, error) {
	var row procRow
	found, err := r.queryRow(ctx, op, r.s.sql.get,
		row.withDetails(&row.state, &row.fp, &row.outcome, &row.leaseUS, &row.steps), scope, key)
	if !found || err != nil {
		return backends.Record{}, err
	}
	rec := row.existing(nil)
	rec.ExpiresIn = sqlstore.FromMicros(row.expireUS)
	rec.Steps = noneEmpty(row.steps)
	return rec, nil
}

// Delete implements backends.Admin in one DELETE of the live record,
// whatever its state or owner; an expired record is left to Sweep and
// reported absent. A pending owner's later Complete, Renew and Release
// match no row of theirs and report false. It waits for a transaction that
// holds the row (a claim made through InTx) to end.
func (s *Store) Delete(ctx context.Context, scope, key string) (bool, error) {
	if err := checkInput("delete", scope, key, nil, "", false); err != nil {
		return false, err
	}
	n, err := s.pool().exec(ctx, "delete", s.sql.delete, scope, key)
	return n == 1, err
}
