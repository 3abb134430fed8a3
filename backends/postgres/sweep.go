package postgres

import (
	"context"
	"time"
)

// sweepSQL deletes at most $1 expired rows. It locks them with SKIP LOCKED,
// so it never waits for (nor blocks) a claim taking over an expired row,
// and deletes them by ctid (a TID scan), re-checking expiry in case a
// takeover won the row first.
const sweepSQL = `DELETE FROM %[1]s
WHERE ctid = ANY (ARRAY (
	SELECT ctid FROM %[1]s
	WHERE expires_at < clock_timestamp()
	LIMIT $1::int
	FOR UPDATE SKIP LOCKED
))
AND expires_at < clock_timestamp()`

// Sweep deletes expired records, batchSize rows per statement (the Config's
// SweepBatchSize when batchSize <= 0), until a batch finds fewer than
// batchSize, and returns how many it deleted. Each batch is its own short
// transaction, so a sweep of millions of rows never holds locks for long and
// never blocks claims. Expired records are already invisible to every
// operation; sweeping only reclaims space. It stops early when ctx ends,
// returning the count so far with the error.
func (s *Store) Sweep(ctx context.Context, batchSize int) (int64, error) {
	if batchSize <= 0 {
		batchSize = s.cfg.sweepBatchSize
	}
	var total int64
	for {
		tag, err := s.pool.Exec(ctx, s.sql.sweepSQL, batchSize)
		if _, err := interpretError("sweep", err); err != nil {
			return total, err
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(batchSize) {
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
