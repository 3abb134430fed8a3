package mysqlstore

import (
	"cmp"
	"context"
	"strconv"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

const (
	// listSQL: state, cursor expiry (µs since 1970), the same, cursor
	// scope, the same, cursor key, age µs, scope, scope, key prefix, key
	// prefix, limit. One state's range of the index on (state,
	// expires_at), read from the cursor on in index order — (expires_at,
	// scope, key), the primary key being the index's suffix — until a page
	// is full: a walk reads each index entry of the state once, and no
	// row of another state. The filters (age, scope, prefix) apply to the rows
	// read. The scope filter is an IF, not "? = '' OR scope = ?": MariaDB
	// turns the latter into an equality that makes it sort the whole rest
	// of the range instead of stopping at the limit
	// (TestListAndSweepUseTheStateIndex).
	listSQL = "SELECT scope, `key`, state, fingerprint,\n" +
		"\tCOALESCE(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), lease_until), 0),\n" +
		"\t" + detailColumns + ",\n" +
		"\tTIMESTAMPDIFF(MICROSECOND, TIMESTAMP'1970-01-01 00:00:00', expires_at)\n" +
		"FROM `once_records` FORCE INDEX (`once_records_state_idx`)\n" +
		"WHERE state = ? AND expires_at > UTC_TIMESTAMP(6)\n" +
		"\tAND (expires_at > " + cursorExpiry + " OR (expires_at = " + cursorExpiry + "\n" +
		"\t\tAND (scope > ? OR (scope = ? AND `key` > ?))))\n" +
		"\tAND IF(state = 3, held_at, created_at) <= UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND\n" +
		"\tAND IF(LENGTH(?) = 0, TRUE, scope = ?) AND LEFT(`key`, LENGTH(?)) = ?\n" +
		"ORDER BY expires_at, scope, `key`\n" +
		"LIMIT ?"

	cursorExpiry = "(TIMESTAMP'1970-01-01 00:00:00' + INTERVAL ? MICROSECOND)"

	// countSQL: table name. One read of the whole table (for stats), and
	// the table's size from information_schema (InnoDB's estimate).
	countSQL = "SELECT\n" +
		"\tCOALESCE(SUM(state = 1 AND expires_at > UTC_TIMESTAMP(6)), 0),\n" +
		"\tCOALESCE(SUM(state = 3 AND expires_at > UTC_TIMESTAMP(6)), 0),\n" +
		"\tCOALESCE(SUM(state = 2 AND expires_at > UTC_TIMESTAMP(6)), 0),\n" +
		"\tCOALESCE(MAX(IF(state = 1 AND expires_at > UTC_TIMESTAMP(6),\n" +
		"\t\tTIMESTAMPDIFF(MICROSECOND, created_at, UTC_TIMESTAMP(6)), NULL)), 0),\n" +
		"\tCOALESCE(MAX(IF(state = 3 AND expires_at > UTC_TIMESTAMP(6),\n" +
		"\t\tTIMESTAMPDIFF(MICROSECOND, held_at, UTC_TIMESTAMP(6)), NULL)), 0),\n" +
		"\tCOALESCE(SUM(expires_at <= UTC_TIMESTAMP(6)), 0),\n" +
		"\tCOUNT(*),\n" +
		"\t(SELECT COALESCE(MAX(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES\n" +
		"\t\tWHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?)\n" +
		"FROM `once_records`"
)

var _ backends.Lister = (*Store)(nil)

// List implements backends.Lister with keyset pagination along the index
// on (state, expires_at): the range of the state asked for, or for State
// zero the pending rows' range first, then the held rows' (whose size is
// the number of held keys). A page is one statement
// that reads index entries from the cursor until it holds Limit matching
// records or the range ends; a walk reads each entry of the ranges it
// walks once. A record whose expiry moves during the walk (a renewal, a
// reconciler's lease) may be missed or listed twice, as the contract
// allows.
func (s *Store) List(ctx context.Context, p backends.ListParams) (backends.ListPage, error) {
	const op = "list"
	if err := p.Validate(); err != nil {
		return backends.ListPage{}, err
	}
	codec := p.Cursors()
	c, err := parseListCursor(p.Cursor, codec)
	if err != nil {
		return backends.ListPage{}, err
	}
	if p.State == backends.StateCompleted && p.OlderThan > 0 {
		return backends.ListPage{}, nil // a completed record's Age is zero
	}
	if c.state == 0 {
		c.state = cmp.Or(p.State, backends.StatePending)
	}
	limit := p.PageLimit()
	st, err := s.stmts.get(ctx, op, s.sql.list)
	if err != nil {
		return backends.ListPage{}, err
	}
	rows, err := st.QueryContext(ctx, int64(c.state), c.expiresUS, c.expiresUS, c.scope, c.scope, c.key,
		sqlstore.AgeMicros(p.OlderThan), p.Scope, p.Scope, p.KeyPrefix, p.KeyPrefix, limit)
	if _, err := interpretError(op, err); err != nil {
		return backends.ListPage{}, err
	}
	defer func() { _ = rows.Close() }()
	var (
		page backends.ListPage
		last listCursor
	)
	for rows.Next() {
		var (
			l   backends.Listed
			row procRow
		)
		if err := rows.Scan(append(row.withDetails(&l.Scope, &l.Key, &row.state, &row.fp, &row.leaseUS), &last.expiresUS)...); err != nil {
			_, err = interpretError(op, err)
			return backends.ListPage{}, err
		}
		l.Record = row.existing(nil)
		l.Record.Outcome = nil // listed without it
		l.Record.ExpiresIn = sqlstore.FromMicros(row.expireUS)
		last.scope, last.key = l.Scope, l.Key
		page.Records = append(page.Records, l)
	}
	if _, err := interpretError(op, rows.Err()); err != nil {
		return backends.ListPage{}, err
	}
	switch {
	case len(page.Records) == limit:
		last.state = c.state
		page.Next = last.encode(codec)
	case c.state == backends.StatePending && p.State == 0:
		page.Next = listCursor{state: backends.StateHeld, expiresUS: minCursorUS}.encode(codec)
	}
	return page, nil
}

// Count implements backends.Lister in one statement that reads the whole
// table (for stats). SizeBytes is InnoDB's estimate of the table's data
// and index size. OldestPending and OldestHeld are never negative (see
// ageFromMicros).
func (s *Store) Count(ctx context.Context) (backends.Counts, error) {
	var (
		c                backends.Counts
		oldestP, oldestH int64
	)
	_, err := s.pool().queryRow(ctx, "count", s.sql.count,
		[]any{&c.Pending, &c.Held, &c.Completed, &oldestP, &oldestH, &c.Expired, &c.Stored, &c.SizeBytes}, s.cfg.table)
	if err != nil {
		return backends.Counts{}, err
	}
	c.OldestPending, c.OldestHeld = ageFromMicros(oldestP), ageFromMicros(oldestH)
	return c, nil
}

// minCursorUS is 1000-01-01 00:00:00 UTC, DATETIME's start, in µs since
// 1970: a cursor expiry before any row's, so that a walk's first page
// starts at its range's start. maxCursorUS is DATETIME(6)'s end,
// 9999-12-31 23:59:59.999999 UTC: no row expires later.
const (
	minCursorUS = -30_610_224_000_000_000
	maxCursorUS = 253_402_300_799_999_999
)

// listCursor is a position in a List walk: the state whose range is
// walked (zero before the first page), and the index position (expiry,
// scope, key) of the last record returned in it (minCursorUS, "" and ""
// for none yet).
type listCursor struct {
	state      backends.State
	expiresUS  int64
	scope, key string
}

// encode returns the List cursor of c for the walk of codec; the expiry
// is written as its distance from minCursorUS (never negative).
func (c listCursor) encode(codec backends.CursorCodec) string {
	return codec.Encode(c.state.String(), strconv.FormatUint(uint64(c.expiresUS-minCursorUS), 10), c.scope, c.key)
}

// parseListCursor parses a cursor of encode for codec's parameters; ""
// is the start of a walk (state zero, expiry minCursorUS). It refuses,
// with a *backends.ListParamsError, anything encode does not return (an
// expiry outside DATETIME's range included), a cursor returned for other
// parameters, one walking a state the parameters do not select, and a
// scope or key no record can have.
func parseListCursor(s string, codec backends.CursorCodec) (listCursor, error) {
	f, err := codec.Decode(s, 4)
	if err != nil || f == nil {
		return listCursor{expiresUS: minCursorUS}, err
	}
	st, err := codec.State(f[0])
	if err != nil {
		return listCursor{}, err
	}
	us, err := backends.CursorUint(f[1], maxCursorUS-minCursorUS)
	if err != nil {
		return listCursor{}, err
	}
	if err := backends.CheckCursorRecord(f[2], f[3]); err != nil {
		return listCursor{}, err
	}
	return listCursor{state: st, expiresUS: int64(us) + minCursorUS, scope: f[2], key: f[3]}, nil
}
