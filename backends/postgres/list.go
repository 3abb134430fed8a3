package postgres

import (
	"cmp"
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/backends"
	"github.com/stagedoor/once/backends/internal/sqlstore"
)

var _ backends.Lister = (*Store)(nil)

// List implements backends.Lister with keyset pagination in (scope, key)
// order, so a walk returns each matching record once. Held records are
// read from the partial index on held_at (its size is the number of held
// keys); pending and completed records, which have no index of their own
// (one would cost every claim and completion), are read along the primary
// key from the cursor until a page is full — a walk over pending or
// completed records reads the table once. Listing pending and held runs
// the pending walk, then the held one.
func (s *Store) List(ctx context.Context, p backends.ListParams) (backends.ListPage, error) {
	const op = "list"
	if err := p.Validate(); err != nil {
		return backends.ListPage{}, err
	}
	codec := p.Cursors()
	c, err := parsePGCursor(p.Cursor, codec)
	if err != nil {
		return backends.ListPage{}, err
	}
	if p.State == backends.StateCompleted && p.OlderThan > 0 {
		return backends.ListPage{}, nil // a completed record's Age is zero
	}
	limit := p.PageLimit()
	if c.state == 0 {
		c.state = cmp.Or(p.State, backends.StatePending)
	}
	sql := s.sql.List
	if c.state == backends.StateHeld {
		sql = s.sql.ListHeld
	}
	rows, done, err := s.query(ctx, sql, int16(c.state), sqlstore.AgeMicros(p.OlderThan), p.Scope, p.KeyPrefix, c.scope, c.key, limit)
	if err != nil {
		_, err = interpretError(op, err)
		return backends.ListPage{}, err
	}
	defer done()
	var page backends.ListPage
	for rows.Next() {
		var (
			l                                backends.Listed
			state                            int16
			fp                               []byte
			leaseUS, expireUS, ageUS, holdUS int64
			code, message                    string
		)
		if err := rows.Scan(&l.Scope, &l.Key, &state, &fp, &leaseUS, &expireUS, &ageUS, &holdUS, &code, &message); err != nil {
			_, err = interpretError(op, err)
			return backends.ListPage{}, err
		}
		l.Record = existing(state, fp, nil, sqlstore.FromMicros(leaseUS))
		l.Record.Outcome = nil // listed without it
		withDetails(&l.Record, ageUS, holdUS, code, message)
		l.Record.ExpiresIn = sqlstore.FromMicros(expireUS)
		page.Records = append(page.Records, l)
	}
	if err := rows.Err(); err != nil {
		_, err = interpretError(op, err)
		return backends.ListPage{}, err
	}
	switch {
	case len(page.Records) == limit:
		last := page.Records[len(page.Records)-1]
		page.Next = pgCursor{state: c.state, scope: last.Scope, key: last.Key}.encode(codec)
	case c.state == backends.StatePending && p.State == 0:
		page.Next = pgCursor{state: backends.StateHeld}.encode(codec)
	}
	return page, nil
}

// Count implements backends.Lister in one statement that reads the whole
// table (for stats). SizeBytes is pg_total_relation_size of the table.
func (s *Store) Count(ctx context.Context) (backends.Counts, error) {
	var (
		c                backends.Counts
		oldestP, oldestH int64
	)
	err := s.db.QueryRow(ctx, s.sql.Count).Scan(&c.Pending, &c.Held, &c.Completed, &oldestP, &oldestH, &c.Expired, &c.Stored, &c.SizeBytes)
	if _, err := interpretError("count", err); err != nil {
		return backends.Counts{}, err
	}
	// Never negative, as Record.Age (see withDetails).
	c.OldestPending, c.OldestHeld = max(sqlstore.FromMicros(oldestP), 0), max(sqlstore.FromMicros(oldestH), 0)
	return c, nil
}

// pgCursor is a position in a List walk: the state being walked (zero
// before the first page), and the last (scope, key) returned in it ("" and
// "" for none yet).
type pgCursor struct {
	state      backends.State
	scope, key string
}

// encode returns the List cursor of c for the walk of codec.
func (c pgCursor) encode(codec backends.CursorCodec) string {
	return codec.Encode(c.state.String(), c.scope, c.key)
}

// parsePGCursor parses a cursor of encode for codec's parameters; "" is
// the start of a walk (state zero). It refuses, with a
// *backends.ListParamsError, anything encode does not return, a cursor
// returned for other parameters, one walking a state the parameters do
// not select, and a scope or key no record can have (PostgreSQL would
// refuse a NUL or invalid UTF-8 with an error of its own).
func parsePGCursor(s string, codec backends.CursorCodec) (pgCursor, error) {
	f, err := codec.Decode(s, 3)
	if err != nil || f == nil {
		return pgCursor{}, err
	}
	st, err := codec.State(f[0])
	if err != nil {
		return pgCursor{}, err
	}
	if err := backends.CheckCursorRecord(f[1], f[2]); err != nil {
		return pgCursor{}, err
	}
	return pgCursor{state: st, scope: f[1], key: f[2]}, nil
}

// query runs a statement that returns rows; done closes them (and frees a
// single connection for the next statement).
func (s *Store) query(ctx context.Context, sql string, args ...any) (pgx.Rows, func(), error) {
	if sd, ok := s.db.(*serialDB); ok {
		sd.mu.Lock()
		rows, err := sd.db.Query(ctx, sql, args...)
		if err != nil {
			sd.mu.Unlock()
			return nil, nil, err
		}
		return rows, func() { rows.Close(); sd.mu.Unlock() }, nil
	}
	rows, err := s.db.(DB).Query(ctx, sql, args...)
	if err != nil {
		return nil, nil, err
	}
	return rows, rows.Close, nil
}
