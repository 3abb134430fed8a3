package sqlitestore

import (
	"context"

	"github.com/stagedoor/once/backends"
)

// Get implements backends.Admin with one read on a read connection: no
// lock, no write. Lease and expiry are measured on the store's clock. It
// reports the record's checkpoints (Record.Steps).
func (s *Store) Get(ctx context.Context, scope, key string) (backends.Record, error) {
	if err := checkNames("get", scope, key); err != nil {
		return backends.Record{}, err
	}
	r, err := s.readWith(ctx, s.reader, "get", s.sql.get, scope, key)
	now := s.nowMicros()
	if err != nil || !r.live(now) {
		return backends.Record{}, err
	}
	rec := r.record(now)
	rec.ExpiresIn = remaining(now, r.expiresAt)
	rec.Steps = r.steps
	return rec, nil
}

// Delete implements backends.Admin in one DELETE of the live record,
// whatever its state or owner; an expired one is left to Sweep and
// reported absent. A pending owner's later writes match no row of theirs.
func (s *Store) Delete(ctx context.Context, scope, key string) (bool, error) {
	if err := checkNames("delete", scope, key); err != nil {
		return false, err
	}
	res, err := s.writer.ExecContext(ctx, s.sql.delete, scope, key, s.nowMicros())
	n, err := affected("delete", res, err)
	if n == 1 {
		s.watch.notify(scope, key)
	}
	return n == 1, err
}
