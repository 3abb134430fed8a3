package sqlitestore

import (
	"context"
	"time"

	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// Sweep deletes expired records, Config.SweepBatchSize rows per statement,
// until a batch finds fewer, and returns how many it deleted. Each batch is one short
// write transaction, so claims queue behind one batch at most. Expired
// records are already invisible to every operation; sweeping only reclaims
// space. It stops early when ctx ends, returning the count so far with the
// error.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	batchSize := s.sweepBatchSize
	var total int64
	for {
		res, err := s.writer.ExecContext(ctx, s.sql.sweep, s.nowMicros(), batchSize)
		n, err := affected("sweep", res, err)
		total += n
		if err != nil || n < int64(batchSize) {
			return total, err
		}
	}
}

// RunSweeper sweeps every interval (see Sweep) until ctx ends, then
// returns ctx's error. It starts no goroutine: call it in one you own, e.g.
// go store.RunSweeper(ctx, time.Minute). Errors of a sweep go to the
// Config's OnSweepError and the next tick tries again. An interval <= 0
// means one minute.
func (s *Store) RunSweeper(ctx context.Context, interval time.Duration) error {
	return sqlstore.RunSweeper(ctx, interval, s.Sweep, s.onSweepError)
}
