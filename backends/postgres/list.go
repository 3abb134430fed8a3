package postgres

import (
	"context"
	"encoding/hex"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/stagedoor/once/backends"
)

var _ backends.Lister = (*Store)(nil)

// List implements backends.Lister with keyset pagination in (scope, key)
// order, so a walk returns each matching record once. Held records are
// read from the partial index on held_at (its size is the number of held
// keys); pending records, which have no index of their own (one would
// cost every claim and completion), are read along the primary key from
// the cursor until a page is full — a walk over pending records reads
// the table once. Listing both runs the pending walk, then the held one.
func (s *Store) List(ctx context.Context, p backends.ListParams) (backends.ListPage, error) {
	const op = "list"
	if err := p.Validate(); err != nil {
		return backends.ListPage{}, err
	}
	c, err := parsePGCursor(p.Cursor, p)
	if err != nil {
		return backends.ListPage{}, err
	}
	limit := p.Limit
	if limit <= 0 {
		limit = backends.DefaultListLimit
	}
	limit = min(limit, backends.MaxListLimit)
	if c.state == 0 {
		c.state = backends.StatePending
		if p.State == backends.StateHeld {
			c.state = backends.StateHeld
		}
	}
	sql := s.sql.List
	if c.state == backends.StateHeld {
		sql = s.sql.ListHeld
	}
	rows, done, err := s.query(ctx, sql, int16(c.state), micros(p.OlderThan), p.Scope, p.KeyPrefix, c.scope, c.key, limit)
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
		l.Record = existing(state, fp, nil, fromMicros(leaseUS))
		withDetails(&l.Record, ageUS, holdUS, code, message)
		l.ExpiresIn = fromMicros(expireUS)
		page.Records = append(page.Records, l)
	}
	if err := rows.Err(); err != nil {
		_, err = interpretError(op, err)
		return backends.ListPage{}, err
	}
	switch {
	case len(page.Records) == limit:
		last := page.Records[len(page.Records)-1]
		page.Next = pgCursor{binding: c.binding, state: c.state, scope: last.Scope, key: last.Key}.String()
	case c.state == backends.StatePending && p.State == 0:
		page.Next = pgCursor{binding: c.binding, state: backends.StateHeld}.String()
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
	c.OldestPending, c.OldestHeld = max(fromMicros(oldestP), 0), max(fromMicros(oldestH), 0)
	return c, nil
}

// pgCursor is a position in a List walk: the state being walked, and the
// last (scope, key) returned in it; binding is the walk's
// ListParams.CursorBinding.
type pgCursor struct {
	binding    string
	state      backends.State
	scope, key string
}

func (c pgCursor) String() string {
	return c.binding + "." + string(rune('0'+c.state)) + "." + hex.EncodeToString([]byte(c.scope)) + "." + hex.EncodeToString([]byte(c.key))
}

// maxPGCursorLen bounds the cursors pgCursor.String returns.
const maxPGCursorLen = 17 + 3 + 3 + 2*backends.MaxScopeLen + 2*backends.MaxKeyLen

// parsePGCursor parses a cursor of pgCursor.String for p; "" is the
// start of a walk (binding set, state zero). It refuses, with a
// *backends.ListParamsError, anything String does not return (a
// non-canonical spelling included), a cursor returned for other
// parameters, and one walking a state p does not select.
func parsePGCursor(s string, p backends.ListParams) (pgCursor, error) {
	if s == "" {
		return pgCursor{binding: p.CursorBinding()}, nil
	}
	if len(s) > maxPGCursorLen {
		return pgCursor{}, backends.BadCursor()
	}
	parts := strings.Split(s, ".")
	if len(parts) != 4 || (parts[1] != "1" && parts[1] != "3") {
		return pgCursor{}, backends.BadCursor()
	}
	scope, err1 := hex.DecodeString(parts[2])
	key, err2 := hex.DecodeString(parts[3])
	if err1 != nil || err2 != nil || len(scope) > backends.MaxScopeLen || len(key) > backends.MaxKeyLen {
		return pgCursor{}, backends.BadCursor()
	}
	c := pgCursor{binding: parts[0], state: backends.State(parts[1][0] - '0'), scope: string(scope), key: string(key)}
	if c.String() != s {
		return pgCursor{}, backends.BadCursor()
	}
	if err := p.CheckCursorBinding(c.binding); err != nil {
		return pgCursor{}, err
	}
	if p.State != 0 && c.state != p.State {
		return pgCursor{}, backends.BadCursor()
	}
	return c, nil
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
