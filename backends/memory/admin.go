package memory

import (
	"context"

	"github.com/stagedoor/once/backends"
)

var _ backends.Admin = (*Store)(nil)

// Get implements backends.Admin. It reads the record under its shard's
// mutex and changes nothing, not even an expired record (which it reports
// absent). The returned slices are the caller's (see backends.Record).
func (s *Store) Get(ctx context.Context, scope, key string) (backends.Record, error) {
	if err := ctx.Err(); err != nil {
		return backends.Record{}, err
	}
	if err := checkNames("get", scope, key); err != nil {
		return backends.Record{}, err
	}
	sh := s.shardFor(scope, key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	e, ok := sh.records[recordKey{scope, key}]
	if !ok || !now.Before(e.expiresAt) {
		return backends.Record{}, nil
	}
	r := view(e, now)
	r.Steps = clone(e.steps)
	return r, nil
}

// Delete implements backends.Admin. It removes the record of (scope, key)
// whatever its state or owner and wakes its watchers; a pending owner's
// later Complete, Renew and Release find no record of theirs and report
// false. It reports whether a live record existed.
func (s *Store) Delete(ctx context.Context, scope, key string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := checkNames("delete", scope, key); err != nil {
		return false, err
	}
	k := recordKey{scope, key}
	sh := s.shardFor(scope, key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if _, ok := sh.lookup(k, s.now()); !ok {
		return false, nil
	}
	sh.remove(k)
	return true, nil
}
