package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/stagedoor/once/backends"
)

// The fenced writes: one statement each on the writer, conditional on the
// owner token of a live pending row (Release two when the record has
// checkpoints).

// Complete implements backends.Store in one UPDATE; a repeated Complete
// that finds the record already completed by the same owner with the same
// outcome costs one more SELECT to tell so.
func (s *Store) Complete(ctx context.Context, p backends.CompleteParams) (bool, error) {
	return s.complete(ctx, s.pool(), p)
}

func (s *Store) complete(ctx context.Context, h on, p backends.CompleteParams) (bool, error) {
	if err := checkWrite("complete", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	now := s.nowMicros()
	res, err := h.writer.ExecContext(ctx, s.sql.complete,
		nonNil(p.Outcome), now, deadline(now, p.Retention), p.Scope, p.Key, p.Owner, now)
	n, err := affected("complete", res, err)
	if err != nil {
		return false, err
	}
	if n == 1 {
		s.watch.notify(p.Scope, p.Key)
		return true, nil
	}
	var one int
	err = h.reader.QueryRowContext(ctx, s.sql.completedBy, p.Scope, p.Key, p.Owner, nonNil(p.Outcome), now).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, interpretError("complete", err)
}

// Renew implements backends.Store in one UPDATE.
func (s *Store) Renew(ctx context.Context, p backends.RenewParams) (bool, error) {
	return s.renew(ctx, s.pool(), p)
}

func (s *Store) renew(ctx context.Context, h on, p backends.RenewParams) (bool, error) {
	if err := checkWrite("renew", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	now := s.nowMicros()
	res, err := h.writer.ExecContext(ctx, s.sql.renew, deadline(now, p.Lease), p.Scope, p.Key, p.Owner, now)
	n, err := affected("renew", res, err)
	return n == 1, err
}

// Checkpoint implements backends.Store in one UPDATE, fenced as Complete's
// and Renew's.
func (s *Store) Checkpoint(ctx context.Context, p backends.CheckpointParams) (bool, error) {
	return s.checkpoint(ctx, s.pool(), p)
}

func (s *Store) checkpoint(ctx context.Context, h on, p backends.CheckpointParams) (bool, error) {
	if err := checkWrite("checkpoint", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	var steps any // NULL: no checkpoints
	if len(p.Steps) > 0 {
		steps = p.Steps
	}
	res, err := h.writer.ExecContext(ctx, s.sql.checkpoint, steps, p.Scope, p.Key, p.Owner, s.nowMicros())
	n, err := affected("checkpoint", res, err)
	return n == 1, err
}

// Release implements backends.Store in one DELETE when the record has no
// checkpoints. Otherwise (the record has checkpoints, or is not the
// owner's) an UPDATE follows, which ends the lease of the owner's record
// with checkpoints: SQLite has no single statement that deletes a row or
// else updates it. Between the two only the owner could change the
// checkpoints, and the owner is the one releasing; any other change the
// UPDATE's fence sees. Either way it wakes the key's watchers.
func (s *Store) Release(ctx context.Context, p backends.ReleaseParams) (bool, error) {
	return s.release(ctx, s.pool(), p)
}

func (s *Store) release(ctx context.Context, h on, p backends.ReleaseParams) (bool, error) {
	if err := checkWrite("release", p.Scope, p.Key, p.Owner, nil); err != nil {
		return false, err
	}
	now := s.nowMicros()
	res, err := h.writer.ExecContext(ctx, s.sql.release, p.Scope, p.Key, p.Owner, now)
	n, err := affected("release", res, err)
	if err == nil && n == 0 {
		res, err = h.writer.ExecContext(ctx, s.sql.endLease, p.Scope, p.Key, p.Owner, now)
		n, err = affected("release", res, err)
	}
	if n == 1 {
		s.watch.notify(p.Scope, p.Key)
	}
	return n == 1, err
}
