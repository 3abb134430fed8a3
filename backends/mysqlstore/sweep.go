package mysqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// Sweep deletes expired records, Config.SweepBatchSize rows per statement,
// until a batch finds fewer, and returns how many it deleted. Each batch is its own short
// READ COMMITTED transaction, so it locks only the expired rows it deletes
// (no gap locks that would hold up the inserts of concurrent claims) and
// never holds them for long. Expired records are already invisible to every
// operation; sweeping only reclaims space. A batch that InnoDB picks as
// a deadlock victim (a concurrent write locked rows in another order) was
// rolled back whole and runs again, at most deadlockAttempts times in all.
// It stops early when ctx ends, returning the count so far with the error.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	batchSize := s.cfg.sweepBatchSize
	var total int64
	for attempt := 1; ; attempt++ {
		n, err := s.sweepBatch(ctx, batchSize)
		if err != nil && code(err) == CodeDeadlock && attempt < deadlockAttempts && ctx.Err() == nil {
			continue
		}
		attempt = 0
		total += n
		if err != nil || n < int64(batchSize) {
			return total, err
		}
	}
}

func (s *Store) sweepBatch(ctx context.Context, batchSize int) (int64, error) {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if _, err := interpretError("sweep", err); err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	n, err := runner{s: s, tx: tx}.exec(ctx, "sweep", s.sql.sweep, batchSize)
	if err != nil {
		return 0, err
	}
	if _, err := interpretError("sweep", tx.Commit()); err != nil {
		return 0, err
	}
	return n, nil
}

// RunSweeper sweeps every interval (see Sweep) until ctx ends, then
// returns ctx's error. It starts no goroutine: call it in one you own, e.g.
// go store.RunSweeper(ctx, time.Minute). Errors of a sweep go to the
// Config's OnSweepError and the next tick tries again. An interval <= 0
// means one minute.
func (s *Store) RunSweeper(ctx context.Context, interval time.Duration) error {
	return sqlstore.RunSweeper(ctx, interval, s.Sweep, s.cfg.onSweepError)
}
