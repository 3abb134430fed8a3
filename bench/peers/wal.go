package peers

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// walProbe attributes WAL to the run's database with pg_walinspect: the
// records between two flush positions that touch a relation of the
// database, and every record of the transactions that wrote one (their
// commit records included). Other databases' writes on the shared server
// are left out.
type walProbe struct {
	pool    *pgxpool.Pool
	pattern string // block_ref of a relation in the database: "rel <tablespace>/<database oid>/"
}

func newWALProbe(ctx context.Context, pool *pgxpool.Pool) (*walProbe, error) {
	if _, err := pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_walinspect"); err != nil {
		return nil, err
	}
	var oid uint32
	if err := pool.QueryRow(ctx, "SELECT oid FROM pg_database WHERE datname = current_database()").Scan(&oid); err != nil {
		return nil, err
	}
	return &walProbe{pool: pool, pattern: `rel \d+/` + strconv.FormatUint(uint64(oid), 10) + `/`}, nil
}

// position is the WAL flush position: with synchronous commit, a cell's
// commits are flushed when it ends.
func (w *walProbe) position(ctx context.Context) (string, error) {
	var lsn string
	err := w.pool.QueryRow(ctx, "SELECT pg_current_wal_flush_lsn()::text").Scan(&lsn)
	return lsn, err
}

const walOfDatabase = `WITH r AS (
	SELECT xid, record_length, block_ref FROM pg_get_wal_records_info($1::pg_lsn, $3::pg_lsn)
), ours AS (
	SELECT DISTINCT xid FROM r WHERE block_ref ~ $2 AND xid <> '0'::xid
)
SELECT coalesce(sum(record_length), 0)::bigint FROM r WHERE block_ref ~ $2 OR xid IN (SELECT xid FROM ours)`

// bytesSince is the WAL the database wrote since from.
func (w *walProbe) bytesSince(ctx context.Context, from string) (int64, error) {
	to, err := w.position(ctx)
	if err != nil || to == from { // pg_walinspect refuses an empty range
		return 0, err
	}
	var n int64
	err = w.pool.QueryRow(ctx, walOfDatabase, from, w.pattern, to).Scan(&n)
	if noRecordAfter(err) {
		return 0, nil
	}
	return n, err
}

// noRecordAfter reports whether err is pg_walinspect finding no complete
// record between the range's start and the flush position. The WAL
// writer flushes whole pages, so a flush position can fall inside
// another database's record; from there pg_walinspect looks for the next
// record's start, and fails when none was flushed. The run's database
// then wrote nothing in the range: with synchronous commit, a cell's
// commit records are flushed when it ends, and they would start after
// that record.
func noRecordAfter(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && strings.HasPrefix(pgErr.Message, "could not find a valid record after")
}
