package postgres

import (
	"context"
	"math"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stagedoor/once/backends/internal/sqlstore"
)

// sweepPages is how many heap pages one sweep statement reads (1 MiB of
// 8 KiB pages): with the batch size, it bounds each statement's work.
const sweepPages = 128

// Sweep deletes expired records and returns how many it deleted. It walks
// the table's heap once, from its first page to its last, sweepPages pages
// per statement, deleting at most Config.SweepBatchSize rows per statement
// (a statement that filled its batch is followed by one that resumes after
// its last deleted row). Each
// statement is short and locks its rows with SKIP LOCKED, so a sweep of
// millions of rows never holds locks for long, never waits for a claim and
// never blocks one. Expired records are already invisible to every
// operation; sweeping only reclaims space.
//
// No index serves the sweeper, so that a claim writes only
// the primary key: a pass reads the whole table, in the background, and a
// record is deleted by the first pass that starts after it expired (a
// row a transaction has locked when the pass reaches it is skipped, and
// left to the next pass). Rows
// added to the table's end during a pass are read too, up to the size the
// table had at the pass's last statement. Sweep stops early when ctx ends,
// returning the count so far with the error.
func (s *Store) Sweep(ctx context.Context) (int64, error) {
	batchSize := s.cfg.sweepBatchSize
	var total int64
	// after is exclusive: (0,0) is no row (offsets start at 1).
	after := pgtype.TID{BlockNumber: 0, OffsetNumber: 0, Valid: true}
	for {
		end := pgtype.TID{BlockNumber: after.BlockNumber + sweepPages, OffsetNumber: 0, Valid: true}
		if end.BlockNumber < after.BlockNumber { // the last chunk of a 32 TiB table
			end.BlockNumber = math.MaxUint32
		}
		var deleted, pages int64
		var last pgtype.TID
		err := s.db.QueryRow(ctx, s.sql.Sweep, after, end, batchSize).Scan(&deleted, &last, &pages)
		if _, err := interpretError("sweep", err); err != nil {
			return total, err
		}
		total += deleted
		switch {
		case deleted >= int64(batchSize):
			after = last // the chunk may hold more: resume after the last deleted row
		case int64(end.BlockNumber) >= pages:
			return total, nil
		default:
			after = pgtype.TID{BlockNumber: end.BlockNumber, OffsetNumber: 0, Valid: true}
		}
	}
}

// RunSweeper sweeps every interval (see Sweep) until ctx ends, then
// returns ctx's error. It starts no goroutine: call it in one you own, e.g.
// go store.RunSweeper(ctx, time.Minute). Errors of a sweep go to the
// Config's OnSweepError and the next tick tries again. An interval <= 0
// means one minute.
func (s *Store) RunSweeper(ctx context.Context, interval time.Duration) error {
	return sqlstore.RunSweeper(ctx, interval, s.Sweep, s.cfg.onSweepError)
}
