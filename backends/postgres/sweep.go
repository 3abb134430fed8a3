package postgres

import (
	"context"
	"time"
)

// Sweep deletes expired records, batchSize rows per statement (the Config's
// SweepBatchSize when batchSize <= 0), until a batch finds fewer than
// batchSize candidates, and returns how many it deleted. Each batch is its
// own short statement that locks its rows with SKIP LOCKED, so a sweep of
// millions of rows never holds locks for long, never waits for a claim and
// never blocks one. Expired records are already invisible to every
// operation; sweeping only reclaims space.
//
// Candidates come from an index on sweep_after, which only the claim sets
// (so that completions stay HOT updates): claim time + lease + retention,
// when a record completed within its lease has expired. A record still live
// at that time (its owner renewed past the first lease, or it was resolved
// late) is not deleted; its sweep_after moves to its expiry and a later
// sweep deletes it. So a record is deleted at the latest one lease after it
// expired, or at the first sweep after that. Sweep stops early when ctx
// ends, returning the count so far with the error.
func (s *Store) Sweep(ctx context.Context, batchSize int) (int64, error) {
	if batchSize <= 0 {
		batchSize = s.cfg.sweepBatchSize
	}
	var total int64
	for {
		var deleted, candidates int64
		err := s.db.QueryRow(ctx, s.sql.Sweep, batchSize).Scan(&deleted, &candidates)
		if _, err := interpretError("sweep", err); err != nil {
			return total, err
		}
		total += deleted
		if candidates < int64(batchSize) {
			return total, nil
		}
	}
}

// RunSweeper sweeps every interval (see Sweep) until ctx ends, then
// returns ctx's error. It starts no goroutine: call it in one you own, e.g.
// go store.RunSweeper(ctx, time.Minute). Errors of a sweep go to the
// Config's OnSweepError and the next tick tries again. An interval <= 0
// means one minute.
func (s *Store) RunSweeper(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = time.Minute
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if _, err := s.Sweep(ctx, 0); err != nil && ctx.Err() == nil {
				s.cfg.onSweepError(err)
			}
		}
	}
}
